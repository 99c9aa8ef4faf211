// `jitcache tune list|show|clear|export`: the tuning database in the user tier.
#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/tuning/tuning_record.hpp"

#include <fstream>
#include <iostream>

namespace jitcache::cli {

using detail::LmdbStore;

namespace {

using tuning::Record;

nlohmann::json pairs(const std::vector<std::pair<std::string, std::string>>& list) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : list)
    out[name] = value;
  return out;
}

// The whole record (export, show), or the line `list` prints.
nlohmann::json to_json(const Digest& key, const Record& r, bool whole) {
  nlohmann::json line = {{"key", key.hex()},
                         {"family", r.family},
                         {"family_version", r.family_version},
                         {"problem", r.problem},
                         {"backend", r.device.backend},
                         {"device", r.device.name},
                         {"parameters", r.parameters},
                         {"best_ms", r.best_ms},
                         {"default_ms", r.default_ms},
                         {"method", tuning::to_string(r.method)},
                         {"when", r.when},
                         {"jitcache_version", r.jitcache_version},
                         {"valid", true}};
  if (whole) {
    line["identity"] = pairs(r.device.identity);
    line["candidates"] = r.candidates;
    line["skipped"] = r.skipped;
  }
  return line;
}

std::string describe(const Digest& key, const Record& r) {
  char times[96];
  std::snprintf(times, sizeof times, "%.3f ms (default %.3f ms, %.2fx)", r.best_ms, r.default_ms,
                r.best_ms > 0 ? r.default_ms / r.best_ms : 0.0);
  return key.hex().substr(0, 16) + "  " + r.family + " v" + std::to_string(r.family_version) +
         "  " + pairs_text(r.problem) + "  " + r.device.backend + ":" + r.device.name + "  " +
         pairs_text(r.parameters) + "  " + times + "  " + tuning::to_string(r.method);
}

// Calls `fn` for each record whose key starts with `prefix` (hex), damaged ones as nullopt
// with the reason.
Expected<void> each_record(LmdbStore& store, const std::string& prefix,
                           const std::function<void(const Digest&, const Expected<Record>&)>& fn) {
  std::vector<std::pair<Digest, Expected<Record>>> found;
  auto scanned = store.for_each_tuning([&](const Digest& key, std::string_view bytes) {
    if (key.hex().compare(0, prefix.size(), prefix) == 0)
      found.emplace_back(key, tuning::decode_record(key, bytes));
  });
  if (!scanned)
    return std::move(scanned).error();
  for (const auto& [key, record] : found) // outside the read transaction
    fn(key, record);
  return {};
}

int list(const Config& config, const std::string& prefix, bool whole, const Output& out,
         std::ostream* file) {
  auto store = open_user_tier(config, false);
  if (!store)
    return fail(store.error());
  if (!*store)
    return 0;
  int damaged = 0;
  auto listed = each_record(**store, prefix, [&](const Digest& key, const Expected<Record>& r) {
    if (!r) {
      ++damaged;
      if (!file)
        out.emit({{"key", key.hex()}, {"valid", false}, {"why", r.error().message}},
                 key.hex().substr(0, 16) + "  DAMAGED: " + r.error().message);
      return;
    }
    const nlohmann::json line = to_json(key, *r, whole);
    if (file)
      *file << line.dump() << '\n';
    else if (whole && !out.json())
      out.emit(line, line.dump(2));
    else
      out.emit(line, describe(key, *r));
  });
  if (!listed)
    return fail(listed.error());
  return damaged > 0 && file
             ? fail(Error(ErrorCode::corrupt,
                          std::to_string(damaged) + " damaged tuning record(s) not exported"))
             : 0;
}

} // namespace

int run_tune(const Config& config, const TuneOptions& options, const Output& out) {
  if (options.command == "list")
    return list(config, options.key_prefix, false, out, nullptr);
  if (options.command == "show")
    return list(config, options.key_prefix, true, out, nullptr);
  if (options.command == "export") {
    if (options.output.empty())
      return list(config, options.key_prefix, true, Output(true), &std::cout);
    std::ofstream file(options.output);
    if (!file)
      return fail(Error(ErrorCode::io_error, "cannot write " + options.output));
    return list(config, options.key_prefix, true, out, &file);
  }
  // clear
  if (!has_user_tier(config)) {
    out.emit({{"cleared", 0}}, "no tuning records");
    return 0;
  }
  auto store = open_user_tier(config, true);
  if (!store)
    return fail(store.error());
  std::uint64_t cleared = 0;
  if (options.key_prefix.empty()) {
    auto all = (*store)->clear_tuning();
    if (!all)
      return fail(all.error());
    cleared = *all;
  } else {
    std::vector<Digest> keys;
    auto scanned = (*store)->for_each_tuning([&](const Digest& key, std::string_view) {
      if (key.hex().compare(0, options.key_prefix.size(), options.key_prefix) == 0)
        keys.push_back(key);
    });
    if (!scanned)
      return fail(scanned.error());
    for (const Digest& key : keys) {
      auto removed = (*store)->remove_tuning(key);
      if (!removed)
        return fail(removed.error());
      cleared += *removed;
    }
  }
  out.emit({{"cleared", cleared}}, "cleared " + std::to_string(cleared) + " tuning record(s)");
  return 0;
}

} // namespace jitcache::cli
