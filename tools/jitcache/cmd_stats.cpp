#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/tiers/user/eviction.hpp"
#include "core/tiers/user/user_store.hpp"
#include "core/tuning/tuning_record.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <sstream>
#include <vector>

namespace jitcache::cli {

using detail::file_bound;
using detail::user_store_dir;

int run_stats_zero(const Config& config, const Output& out) {
  if (auto allowed = may_change(config); !allowed)
    return fail(allowed.error());
  if (!has_user_tier(config)) { // nothing counted but in the use log: nothing is created
    auto dropped = drop_logged_counters(config);
    if (!dropped)
      return fail(dropped.error());
    if (*dropped != detail::LoggedDrop::tier) {
      out.emit({{"zeroed", true}}, "statistics zeroed");
      return 0;
    }
  } // the tier has a data file (made meanwhile, perhaps): its counters are zeroed there
  auto store = open_user_tier(config, true);
  if (!store)
    return fail(store.error());
  if (auto zeroed = (*store)->zero_counters(); !zeroed)
    return fail(zeroed.error());
  out.emit({{"zeroed", true}}, "statistics zeroed");
  return 0;
}

int run_stats(const Config& config, const Output& out) {
  auto store = open_user_tier(config, false);
  if (!store)
    return fail(store.error());
  Stats counters;
  if (!*store) {
    // No data file: the use log's counters, unless a process made the data file meanwhile (and
    // may have folded the log into it): then the tier is read.
    if (auto logged = logged_counters(config))
      counters = *logged;
    else if (!(store = open_user_tier(config, false)))
      return fail(store.error());
  }
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> stored; // entries, bytes
  std::uint64_t file_bytes = 0;
  if (*store) {
    auto read = (*store)->counters();
    if (!read)
      return fail(read.error());
    counters = *read;
    auto usage = (*store)->usage();
    if (!usage)
      return fail(usage.error());
    file_bytes = usage->file_bytes;
    auto listed = (*store)->for_each([&](const Store::Item& item) {
      auto& [entries, bytes] = stored[item.backend.empty() ? "unknown" : item.backend];
      ++entries;
      bytes += item.bytes;
    });
    if (!listed)
      return fail(listed.error());
  }
  std::uint64_t total_entries = 0, total_bytes = 0;
  // The backends always; a front-end (an interposer's requests) once it has been used.
  std::vector<const char*> shown(std::begin(k_backends), std::end(k_backends));
  for (const char* front_end : k_front_ends)
    if (counters.by_backend.count(front_end) || stored.count(front_end))
      shown.push_back(front_end);
  for (const char* backend : shown) {
    const auto [entries, bytes] = stored[backend];
    total_entries += entries;
    total_bytes += bytes;
    nlohmann::json hits_by_tier = nlohmann::json::object();
    if (auto it = counters.by_backend.find(backend); it != counters.by_backend.end())
      for (const auto& [name, value] : it->second)
        if (name.rfind(k_hits_prefix, 0) == 0)
          hits_by_tier[name.substr(std::strlen(k_hits_prefix))] = value;
    const auto get = [&](Counter counter) { return counters.get(backend, counter); };
    nlohmann::json line = {
        {"backend", backend},
        {"hits", counters.hits(backend)},
        {"hits_by_tier", hits_by_tier},
        {"misses", get(Counter::misses)},
        {"compiles", get(Counter::compiles)},
        {"warm_builds", get(Counter::warm_builds)},
        {"compile_errors", get(Counter::compile_errors)},
        {"rejected", get(Counter::rejected)},
        {"corrupt", get(Counter::corrupt)},
        {"store_errors", get(Counter::store_errors)},
        {"bytes_stored", get(Counter::bytes_stored)},
        {"handed_over", get(Counter::handed_over)},
        {"remote_hits", counters.hits(backend, "remote")},
        {"remote_writes", get(Counter::remote_writes)},
        {"remote_refused", get(Counter::remote_refused)},
        {"saved_ms", get(Counter::saved_ns) / 1000000},
        {"entries", entries},
        {"bytes", bytes},
    };
    std::ostringstream text;
    std::string tiers;
    for (const auto& [tier, hits] : hits_by_tier.items())
      tiers +=
          (tiers.empty() ? " (" : ", ") + tier + " " + std::to_string(hits.get<std::uint64_t>());
    text << backend << ": " << counters.hits(backend) << " hits"
         << (tiers.empty() ? "" : tiers + ")") << ", " << get(Counter::misses) << " misses, "
         << get(Counter::compiles) << " compiles";
    // Builds over the runtime's cache warmed by another process's compile are not compiles.
    if (const std::uint64_t warm = get(Counter::warm_builds); warm > 0)
      text << " (and " << warm << " builds over the runtime's warm cache)";
    text << ", " << entries << " entries (" << format_size(bytes) << "), "
         << get(Counter::saved_ns) / 1000000 << " ms of compiling saved";
    if (!config.remote.empty())
      text << "; remote: " << counters.hits(backend, "remote") << " hits, "
           << get(Counter::remote_writes) << " writes, " << get(Counter::remote_refused)
           << " refused";
    // Why the counters stop growing (a runtime's own cache control, JITCACHE_DISABLE): said
    // where the user looks, not only in `jitcache info`.
    if (const PersistencePolicy policy = config.persistence(backend); !policy.enabled) {
      line["persistent_off"] = policy.reason;
      text << "; jitcache's cache is off: " << policy.reason;
    }
    out.emit(line, text.str());
  }
  // The front-ends that count requests of their own (the OpenCL layer, "opencl-layer"): their
  // hits by tier and misses, once used. Their requests are also the backend's, counted above.
  for (const auto& [name, named] : counters.by_backend) {
    if (name == "all" || name == tuning::k_tuning_backend ||
        std::find(std::begin(k_backends), std::end(k_backends), name) != std::end(k_backends))
      continue;
    nlohmann::json by_tier = nlohmann::json::object();
    for (const auto& [counter, value] : named)
      if (counter.rfind(k_hits_prefix, 0) == 0)
        by_tier[counter.substr(std::strlen(k_hits_prefix))] = value;
    const std::uint64_t misses = counters.get(name, Counter::misses);
    out.emit({{"front_end", name},
              {"hits", counters.hits(name)},
              {"hits_by_tier", by_tier},
              {"misses", misses}},
             name + ": " + std::to_string(counters.hits(name)) + " hits " + by_tier.dump() + ", " +
                 std::to_string(misses) + " misses");
  }
  // The tuning database's lookups by origin, problems tuned and damaged records, once used.
  if (auto it = counters.by_backend.find(tuning::k_tuning_backend);
      it != counters.by_backend.end()) {
    nlohmann::json by_origin = nlohmann::json::object();
    for (const auto& [name, value] : it->second)
      if (name.rfind(k_hits_prefix, 0) == 0)
        by_origin[name.substr(std::strlen(k_hits_prefix))] = value;
    const auto get = [&](Counter c) { return counters.get(tuning::k_tuning_backend, c); };
    out.emit({{"backend", tuning::k_tuning_backend},
              {"lookups", counters.hits(tuning::k_tuning_backend)},
              {"lookups_by_origin", by_origin},
              {"tuned", get(Counter::tuned)},
              {"corrupt", get(Counter::corrupt)}},
             std::string(tuning::k_tuning_backend) + ": " +
                 std::to_string(counters.hits(tuning::k_tuning_backend)) + " lookups (" +
                 by_origin.dump() + "), " + std::to_string(get(Counter::tuned)) +
                 " problems tuned, " + std::to_string(get(Counter::corrupt)) + " damaged records");
  }
  const std::string dir = (*store ? (*store)->dir() : user_store_dir(config)).string();
  const std::uint64_t evicted = counters.get("all", Counter::evicted);
  const std::uint64_t evicted_bytes = counters.get("all", Counter::evicted_bytes);
  nlohmann::json total = {
      {"backend", "total"},
      {"entries", total_entries},
      {"bytes", total_bytes},
      {"file_bytes", file_bytes},
      {"max_size", config.max_size ? nlohmann::json(*config.max_size) : nlohmann::json(nullptr)},
      {"max_file_bytes",
       config.max_size ? nlohmann::json(file_bound(*config.max_size)) : nlohmann::json(nullptr)},
      {"evicted", evicted},
      {"evicted_bytes", evicted_bytes},
      {"remote_down", counters.get("all", Counter::remote_down)},
      {"dir", dir}};
  const std::string file_limit =
      config.max_size ? ", at most " + format_size(file_bound(*config.max_size)) : "";
  out.emit(total,
           "total: " + std::to_string(total_entries) + " entries, " + format_size(total_bytes) +
               " (file " + format_size(file_bytes) + file_limit + ") of " +
               (config.max_size ? format_size(*config.max_size) : "unlimited") + "; " +
               std::to_string(evicted) + " evicted (" + format_size(evicted_bytes) + ")" +
               (config.remote.empty()
                    ? ""
                    : "; remote down " + std::to_string(counters.get("all", Counter::remote_down)) +
                          " times") +
               " in " + dir);
  return 0;
}

} // namespace jitcache::cli
