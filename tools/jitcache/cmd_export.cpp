#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/device_target.hpp"
#include "tools/jitcache/portable_records.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/tiers/entry_codec.hpp"
#include "core/tiers/packages/package_format.hpp"
#include "core/tuning/tuning_record.hpp"

#include <iostream>

#include <map>
#include <set>

namespace jitcache::cli {

using detail::encode_entry;
using detail::to_entry;

namespace {

std::string describe(const detail::PackageTarget& target) {
  return target.backend + " " + target.label;
}

} // namespace

int run_export(const Config& config, const ExportOptions& options, const Output& out) {
  std::optional<detail::PackageTarget> device;
  const bool tuning = options.backend == tuning::k_tuning_backend;
  if (options.device) {
    if (options.backend.empty())
      return usage_error("--device needs --backend");
    if (tuning)
      return usage_error("--device selects a device's kernels; tuning records are chosen by "
                         "--arch <backend>-<device name>, as `jitcache tune list` shows");
    auto target = device_target(config, options.backend, *options.device);
    if (!target)
      return fail(target.error());
    device = std::move(*target);
  }
  auto store = open_user_tier(config, false);
  if (!store)
    return fail(store.error());
  std::vector<Digest> keys;
  // Entries by the target they serve: a package serves one.
  std::map<std::pair<std::string, std::string>, std::vector<detail::PackageEntry>> by_target;
  std::map<std::pair<std::string, std::string>, detail::PackageTarget> targets;
  const auto add = [&](const detail::PackageTarget& target, const Digest& key, std::string bytes) {
    const auto id = std::make_pair(target.backend, target.identity);
    targets.emplace(id, target);
    by_target[id].push_back({key, std::move(bytes)});
  };
  if (*store && tuning) {
    // The tuning database's records, each verified; a package of them serves one device.
    auto listed = (*store)->for_each_tuning([&](const Digest& key, std::string_view bytes) {
      auto record = tuning::decode_record(key, bytes);
      if (!record) {
        std::cerr << "jitcache: warn: tuning record " << key.hex() << " is damaged ("
                  << record.error().message << "); not exported\n";
        return;
      }
      const auto target = tuning::package_target(*record);
      if (options.arch.empty() || target.label == options.arch)
        add(target, key, std::string(bytes));
    });
    if (!listed)
      return fail(listed.error());
  }
  if (*store && !tuning) {
    auto listed = (*store)->for_each([&](const Store::Item& item) {
      if (item.valid && (options.backend.empty() || item.backend == options.backend))
        keys.push_back(item.key);
    });
    if (!listed)
      return fail(listed.error());
  }
  for (const Digest& key : keys) {
    auto read = (*store)->visit(key, [&](const EntryView& view) {
      auto target = detail::target_of_stored(view.backend, view.key_fields);
      if (!target || (device && *target != *device) ||
          (!options.arch.empty() && target->label != options.arch))
        return;
      add(*target, key, encode_entry(key, to_entry(view)));
    });
    if (!read)
      return fail(read.error());
  }
  if (by_target.empty())
    return fail(Error(ErrorCode::invalid_argument,
                      "no entry of the user tier matches" +
                          (options.backend.empty() ? "" : " --backend " + options.backend) +
                          (options.arch.empty() ? "" : " --arch " + options.arch) +
                          (device ? " --device (" + describe(*device) + ")" : "") +
                          "; nothing exported"));
  if (by_target.size() > 1) {
    std::string found;
    for (const auto& [id, entries] : by_target)
      found += (found.empty() ? "" : ", ") + describe(targets.at(id)) + " (" +
               std::to_string(entries.size()) + " entries)";
    return fail(Error(ErrorCode::invalid_argument,
                      "a package serves one target, and the matching entries serve " +
                          std::to_string(by_target.size()) + ": " + found +
                          "; choose one with --backend and --arch or --device"));
  }
  const auto& [id, entries] = *by_target.begin();
  const detail::PackageTarget& target = targets.at(id);
  std::set<Digest> exported;
  for (const detail::PackageEntry& entry : entries)
    exported.insert(entry.key);
  auto portable = portable_records(**store, target.backend, exported);
  if (!portable)
    return fail(portable.error());
  auto written = detail::write_package(options.file, target, entries, portable->records);
  if (!written)
    return fail(written.error());
  out.emit({{"file", options.file},
            {"backend", target.backend},
            {"target", target.label},
            {"entries", written->entries},
            {"bytes", written->bytes},
            {"manifests", portable->records.size()},
            {"headers_vouched", portable->vouched},
            {"headers_hashed", portable->hashed},
            {"jitcache_version", written->jitcache_version},
            {"suggested_name", detail::package_file_name(target)}},
           "exported " + std::to_string(written->entries) + " " + describe(target) + " entries (" +
               format_size(written->bytes) + ", " + std::to_string(portable->records.size()) +
               " portable manifests) to " + options.file);
  return 0;
}

} // namespace jitcache::cli
