#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/device_target.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/entry_codec.hpp"
#include "core/package_format.hpp"

#include <map>

namespace jitcache::cli {

namespace {

std::string describe(const detail::PackageTarget& target) {
  return target.backend + " " + target.label;
}

} // namespace

int run_export(const Config& config, const ExportOptions& options, const Output& out) {
  std::optional<detail::PackageTarget> device;
  if (options.device) {
    if (options.backend.empty())
      return fail(Error(ErrorCode::invalid_argument, "--device needs --backend"));
    auto target = device_target(config, options.backend, *options.device);
    if (!target)
      return fail(target.error());
    device = std::move(*target);
  }
  auto store = open_user_tier(config, false);
  if (!store)
    return fail(store.error());
  std::vector<Digest> keys;
  if (*store) {
    auto listed = (*store)->for_each([&](const Store::Item& item) {
      if (item.valid && (options.backend.empty() || item.backend == options.backend))
        keys.push_back(item.key);
    });
    if (!listed)
      return fail(listed.error());
  }
  // Entries by the target they serve: a package serves one.
  std::map<std::pair<std::string, std::string>, std::vector<detail::PackageEntry>> by_target;
  std::map<std::pair<std::string, std::string>, detail::PackageTarget> targets;
  for (const Digest& key : keys) {
    auto read = (*store)->visit(key, [&](const EntryView& view) {
      auto target = detail::target_of_stored(view.backend, view.key_fields);
      if (!target || (device && *target != *device) ||
          (!options.arch.empty() && target->label != options.arch))
        return;
      const auto id = std::make_pair(target->backend, target->identity);
      targets.emplace(id, *target);
      by_target[id].push_back({key, encode_entry(key, to_entry(view))});
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
  auto written = detail::write_package(options.file, target, entries);
  if (!written)
    return fail(written.error());
  out.emit({{"file", options.file},
            {"backend", target.backend},
            {"target", target.label},
            {"entries", written->entries},
            {"bytes", written->bytes},
            {"jitcache_version", written->jitcache_version},
            {"suggested_name", detail::package_file_name(target)}},
           "exported " + std::to_string(written->entries) + " " + describe(target) + " entries (" +
               format_size(written->bytes) + ") to " + options.file);
  return 0;
}

} // namespace jitcache::cli
