// LmdbStore's eviction: applying the least-recently-used policy (core/eviction.hpp) to the
// environment, in a put over the size limit and in prune().
#include "core/eviction.hpp"
#include "core/lmdb_txn.hpp"

namespace jitcache {

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
    c.bytes = v.mv_size;
    MDB_val key = k, when;
    if (mdb_get(txn, e.access, &key, &when) == MDB_SUCCESS)
      c.last_use = as_u64(when);
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
    pruned.bytes += victim.bytes;
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

} // namespace jitcache
