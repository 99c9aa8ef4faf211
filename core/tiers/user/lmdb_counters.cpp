// LmdbStore's counters: kept in the environment, shared by every process using the cache.
#include "core/tiers/user/lmdb_txn.hpp"

namespace jitcache::detail {

namespace {

std::string counter_key(const std::string& backend, const std::string& name) {
  return backend + '\x1f' + name;
}

} // namespace

int add_counters_in(LmdbStore::Env& e, MDB_txn* txn, const Stats& delta) {
  for (const auto& [backend, counters] : delta.by_backend) {
    for (const auto& [name, amount] : counters) {
      std::string k = counter_key(backend, name);
      MDB_val kv{k.size(), k.data()}, v;
      std::uint64_t value = mdb_get(txn, e.counters, &kv, &v) == MDB_SUCCESS ? as_u64(v) : 0;
      value += amount;
      MDB_val nv = as_val(value);
      if (int r = mdb_put(txn, e.counters, &kv, &nv, 0); r != MDB_SUCCESS)
        return r;
    }
  }
  return MDB_SUCCESS;
}

Expected<void> LmdbStore::add_counters(const Stats& delta) {
  auto e = env();
  if (!writes(*e) || (delta.by_backend.empty() && e->uses.empty()))
    return {};
  const int rc =
      write_transaction(*e, [&](MDB_txn* txn) { return add_counters_in(*e, txn, delta); });
  if (rc != MDB_SUCCESS)
    return lmdb_error("counter update", rc, e->dir);
  return {};
}

Expected<void> LmdbStore::zero_counters() {
  auto e = env();
  if (!writes(*e))
    return Error(ErrorCode::read_only, "the cache is read-only: its counters cannot be zeroed");
  if (!e->has_dbs)
    return {};
  // mdb_drop(..., 0) empties the database and keeps it: one short write transaction.
  const int rc = write_transaction(*e, [&](MDB_txn* txn) { return mdb_drop(txn, e->counters, 0); });
  if (rc != MDB_SUCCESS)
    return lmdb_error("counter reset", rc, e->dir);
  return {};
}

Expected<Stats> LmdbStore::counters() {
  auto e = env();
  Stats stats;
  if (!e->has_dbs)
    return stats;
  const int rc = e->read([&](MDB_txn* txn) {
    return scan(txn, e->counters, [&](const MDB_val& k, const MDB_val& v) {
      const std::string name(static_cast<const char*>(k.mv_data), k.mv_size);
      const auto sep = name.find('\x1f');
      if (sep != std::string::npos && v.mv_size == sizeof(std::uint64_t))
        stats.by_backend[name.substr(0, sep)][name.substr(sep + 1)] += as_u64(v);
    });
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("counter read", rc, e->dir);
  return stats;
}

} // namespace jitcache::detail
