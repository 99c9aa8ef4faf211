// LmdbStore's eviction: applying the least-recently-used policy (core/tiers/user/eviction.hpp) to
// the environment, in a put over the size limit and in prune().
#include "core/support/log.hpp"
#include "core/tiers/user/eviction.hpp"
#include "core/tiers/user/lmdb_txn.hpp"

namespace jitcache::detail {

namespace {

// Removes least recently used entries (never `keep`) until `total` is at most `target`.
int evict(LmdbStore::Env& e, MDB_txn* txn, std::uint64_t& total, std::uint64_t target,
          const std::optional<Digest>& keep, LmdbStore::Pruned& pruned) {
  if (total <= target)
    return MDB_SUCCESS;
  std::vector<EvictionCandidate> candidates;
  int r = scan(txn, e.entries, [&](const MDB_val& k, const MDB_val& v) {
    EvictionCandidate c;
    if (k.mv_size != c.key.bytes.size())
      return;
    std::memcpy(c.key.bytes.data(), k.mv_data, k.mv_size);
    c.bytes = footprint(e, v.mv_size);
    c.value_bytes = v.mv_size;
    MDB_val key = k, when;
    if (mdb_get(txn, e.access, &key, &when) == MDB_SUCCESS)
      c.last_use = decode_use(c.key, {static_cast<const char*>(when.mv_data), when.mv_size})
                       .last_use_us.value_or(0);
    candidates.push_back(c);
  });
  if (r != MDB_SUCCESS)
    return r;
  for (const EvictionCandidate& victim :
       choose_victims(std::move(candidates), total, target, keep)) {
    MDB_val vk = as_val(victim.key);
    if ((r = mdb_del(txn, e.entries, &vk, nullptr)) != MDB_SUCCESS)
      return r;
    mdb_del(txn, e.access, &vk, nullptr);
    total -= std::min(total, victim.bytes);
    ++pruned.entries;
    pruned.bytes += victim.value_bytes;
  }
  if (pruned.entries == 0)
    return MDB_SUCCESS;
  Stats evicted;
  evicted.add("all", Counter::evicted, pruned.entries);
  evicted.add("all", Counter::evicted_bytes, pruned.bytes);
  return add_counters_in(e, txn, evicted);
}

} // namespace

int evict_over_limit(LmdbStore::Env& e, MDB_txn* txn, std::uint64_t& total,
                     const std::optional<std::uint64_t>& limit, const Digest& stored,
                     LmdbStore::Pruned& pruned) {
  if (!limit || total <= *limit)
    return MDB_SUCCESS;
  return evict(e, txn, total, eviction_target(*limit), stored, pruned);
}

bool make_room(LmdbStore::Env& e, std::uint64_t bytes, int round) {
  LmdbStore::Pruned pruned;
  bool dropped_records = false;
  const int rc = e.transact(true, [&](MDB_txn* txn) {
    pruned = {};
    dropped_records = false;
    std::uint64_t total = stored_total(e, txn);
    // Besides the entry, a write copies the pages on its path in each tree it changes.
    const std::uint64_t room = (footprint(e, bytes) + (64 << 10)) << round;
    const std::uint64_t target = std::min(total, eviction_target(e.max_size));
    int r = evict(e, txn, total, target > room ? target - room : 0, std::nullopt, pruned);
    MDB_stat records{};
    if (r == MDB_SUCCESS && pruned.entries == 0 && e.has_records &&
        mdb_stat(txn, e.records, &records) == MDB_SUCCESS && records.ms_entries > 0) {
      r = mdb_drop(txn, e.records, 0);
      dropped_records = true;
    }
    return r == MDB_SUCCESS ? set_total(e, txn, total) : r;
  });
  if (rc != MDB_SUCCESS)
    return false;
  if (pruned.entries)
    log::info("the user tier's data file is at its bound (" + format_size(file_bound(e.max_size)) +
              " for a limit of " + format_size(e.max_size) + "): evicted " +
              std::to_string(pruned.entries) + " least recently used entries (" +
              format_size(pruned.bytes) + ")");
  else if (dropped_records)
    log::info("the user tier's data file is at its bound with no entry left to evict: dropped "
              "its records (manifests)");
  return pruned.entries > 0 || dropped_records;
}

Expected<LmdbStore::Pruned> LmdbStore::prune(std::uint64_t max_size) {
  auto e = env();
  if (!writes(*e))
    return read_only_error(e->dir);
  Pruned pruned;
  const int rc = write_transaction(*e, [&](MDB_txn* txn) {
    pruned = {};
    std::uint64_t total = stored_total(*e, txn);
    const int r = evict(*e, txn, total, max_size, std::nullopt, pruned);
    return r == MDB_SUCCESS ? set_total(*e, txn, total) : r;
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("prune", rc, e->dir);
  return pruned;
}

} // namespace jitcache::detail
