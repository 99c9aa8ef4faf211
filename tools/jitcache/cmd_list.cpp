#include "tools/jitcache/backend_table.hpp"
#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/key/key_fields.hpp"
#include "core/tiers/user/access_log.hpp"
#include "core/tiers/user/user_store.hpp"

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <system_error>

namespace jitcache::cli {

namespace {

// What a person recognises an entry by, read from the key fields stored with it: the target
// (OpenCL: the device's name; CUDA, HIP: the architecture), and for CUDA and HIP the program's
// name (the source file `build` was given) and its name expressions (the kernels); then what its
// backend reads in its metadata (OpenCL: the source file `build` was given, and the kernels the
// runtime named). What an entry does not say stays empty ("-").
struct Described {
  std::string source;
  std::vector<std::string> kernels;
  std::string target;
};

// The backends entries were read with, by name (null: not built into this binary).
using Backends = std::map<std::string, std::unique_ptr<detail::Backend>, std::less<>>;

Described describe(const EntryView& entry, Backends& backends) {
  Described out;
  auto known = backends.find(entry.backend);
  if (known == backends.end()) {
    auto found = find_backend(std::string(entry.backend));
    known = backends.emplace(entry.backend, found ? std::move(*found) : nullptr).first;
  }
  if (known->second) {
    detail::EntryDescription described = known->second->describe(entry.metadata);
    out.source = std::move(described.source);
    out.kernels = std::move(described.kernels);
  }
  const auto fields = detail::decode_key_fields(entry.key_fields);
  if (!fields)
    return out;
  for (const KeyField& field : *fields) {
    if (field.section == KeySection::device &&
        (field.name == "device_name" || field.name == "target_arch" || field.name == "target"))
      out.target = field.value;
    else if (field.section == KeySection::source && field.name == "program_name")
      out.source = field.value;
    else if (field.section == KeySection::source && field.name == "name_expression")
      out.kernels.push_back(field.value);
  }
  return out;
}

// "42 s", "5 min", "3 h", "2 d": how long ago, for people.
std::string age_text(std::uint64_t seconds) {
  char text[32];
  if (seconds < 120)
    std::snprintf(text, sizeof text, "%llu s", static_cast<unsigned long long>(seconds));
  else if (seconds < 7200)
    std::snprintf(text, sizeof text, "%llu min", static_cast<unsigned long long>(seconds / 60));
  else if (seconds < 172800)
    std::snprintf(text, sizeof text, "%llu h", static_cast<unsigned long long>(seconds / 3600));
  else
    std::snprintf(text, sizeof text, "%llu d", static_cast<unsigned long long>(seconds / 86400));
  return text;
}

} // namespace

int run_list(const Config& config, const Output& out) {
  // Only a writable open reads the use times (a read-only one does not keep them): one of a
  // tier that a process has opened before (its lock and gate files are there) creates nothing;
  // elsewhere, or where it cannot be had, the ages are unknown.
  std::error_code ec;
  const bool opened_before =
      std::filesystem::exists(detail::user_store_dir(config) / "lock.mdb", ec) &&
      std::filesystem::exists(detail::user_store_dir(config) / "gate", ec);
  auto store = has_user_tier(config) && opened_before && may_change(config)
                   ? open_user_tier(config, true)
                   : Expected<std::shared_ptr<detail::LmdbStore>>(nullptr);
  if (!store || !*store)
    store = open_user_tier(config, false);
  if (!store)
    return fail(store.error());
  if (!*store)
    return 0;
  std::vector<Store::Item> items;
  auto listed = (*store)->for_each([&](const Store::Item& item) { items.push_back(item); });
  if (!listed)
    return fail(listed.error());
  std::vector<Digest> keys;
  for (const Store::Item& item : items)
    keys.push_back(item.key);
  const auto uses = (*store)->entry_uses(keys); // the use log read once, not once per entry
  const std::uint64_t now_us = detail::AccessLog::now_us();
  Backends backends;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Store::Item& item = items[i];
    Described about;
    // Peeked: listing an entry is not a use of it (no hit counted, its age unchanged).
    if (item.valid)
      static_cast<void>((*store)->peek(
          item.key, [&](const EntryView& entry) { about = describe(entry, backends); }));
    const detail::EntryUse* use = uses ? &(*uses)[i] : nullptr;
    std::optional<std::uint64_t> age_s;
    if (use && use->last_use_us && *use->last_use_us <= now_us)
      age_s = (now_us - *use->last_use_us) / 1'000'000;
    nlohmann::json hits = nullptr; // not counted (an older jitcache's entry) or damaged
    if (use && use->hits)
      hits = *use->hits;
    std::string kernels;
    for (const std::string& kernel : about.kernels)
      kernels += (kernels.empty() ? "" : ",") + kernel;
    const auto or_null = [](const std::string& text) {
      return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
    };
    nlohmann::json line = {
        {"key", item.key.hex()},
        {"backend", item.backend},
        {"source", or_null(about.source)},
        {"kernels",
         about.kernels.empty() ? nlohmann::json(nullptr) : nlohmann::json(about.kernels)},
        {"target", or_null(about.target)},
        {"bytes", item.bytes},
        {"last_used_s", age_s ? nlohmann::json(*age_s) : nlohmann::json(nullptr)},
        {"hits", hits},
        {"tier", "user"},
        {"valid", item.valid}};
    const auto shown = [](const std::string& text) { return text.empty() ? "-" : text; };
    out.emit(line, item.key.hex().substr(0, 16) + "  " + shown(item.backend) + "  " +
                       shown(about.source) + "  " + shown(kernels) + "  " + shown(about.target) +
                       "  " + format_size(item.bytes) + "  used " +
                       (age_s ? age_text(*age_s) + " ago" : "-") + "  hits " +
                       (hits.is_null() ? "-" : hits.dump()) + (item.valid ? "" : "  CORRUPT"));
  }
  return 0;
}

} // namespace jitcache::cli
