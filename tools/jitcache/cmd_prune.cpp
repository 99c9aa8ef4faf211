#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/engine/compile_lease.hpp"

#include <cstdint>

namespace jitcache::cli {

using detail::CompileLease;
using detail::LmdbStore;

int run_prune(const Config& config, const std::string& max_size, const Output& out) {
  // 0 is "no limit", as JITCACHE_MAX_SIZE=0 and ccache's -M 0: nothing is evicted (`jitcache
  // clear` empties the cache).
  std::uint64_t limit = config.max_size.value_or(0);
  if (!max_size.empty()) {
    const auto parsed = parse_size(max_size);
    if (!parsed)
      return usage_error("--max-size " + max_size + ": not a size such as 10G, 512M or 4096");
    limit = *parsed;
  }
  if (!config.cache_dir.empty() && !has_user_tier(config)) {
    out.emit({{"evicted", 0}, {"entries", 0}}, "nothing to prune");
    return 0;
  }
  auto store = open_user_tier(config, true);
  if (!store)
    return fail(store.error());
  const std::filesystem::path dir = (*store)->dir();
  LmdbStore::Pruned pruned;
  if (limit) {
    auto done = (*store)->prune(limit);
    if (!done)
      return fail(done.error());
    pruned = *done;
  }
  auto usage = (*store)->usage();
  if (!usage)
    return fail(usage.error());
  const auto lease_dir = (*store)->lease_dir();
  const std::size_t leases = lease_dir ? CompileLease::reap(*lease_dir) : 0;
  store->reset(); // compaction needs the environment closed in this process too
  auto compacted = LmdbStore::compact(dir);
  if (!compacted)
    return fail(compacted.error());

  nlohmann::json line = {
      {"max_size", limit ? nlohmann::json(limit) : nlohmann::json(nullptr)},
      {"evicted", pruned.entries},
      {"evicted_bytes", pruned.bytes},
      {"entries", usage->entries},
      {"bytes", usage->value_bytes},
      {"leases_removed", leases},
      {"compacted", compacted->done},
      {"file_bytes_before", compacted->file_bytes_before},
      {"file_bytes", compacted->file_bytes_after},
      {"dir", dir.string()},
  };
  std::string text = "evicted " + std::to_string(pruned.entries) + " entries (" +
                     format_size(pruned.bytes) + "); " + std::to_string(usage->entries) +
                     " entries (" + format_size(usage->value_bytes) + ") remain" +
                     (limit ? " under " + format_size(limit) : std::string()) + "; data file ";
  if (compacted->done) {
    text += "compacted from " + format_size(compacted->file_bytes_before) + " to " +
            format_size(compacted->file_bytes_after);
  } else {
    line["not_compacted"] = compacted->reason;
    text += format_size(compacted->file_bytes_before) + ", not compacted: " + compacted->reason;
  }
  if (leases)
    text += "; removed " + std::to_string(leases) + " compile lease(s) left by killed processes";
  out.emit(line, text);
  return 0;
}

} // namespace jitcache::cli
