// LmdbStore's counters: kept in the environment, shared by every process using the cache, and
// told through the use log until a write folds it in.
#include "core/tiers/user/lmdb_txn.hpp"

#include "core/support/log.hpp"

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

Expected<void> tell_through_log(LmdbStore::Env& e, const Stats& counters) {
  UseNews news{counters, e.uses.take()};
  if (news.empty())
    return {};
  auto appended = append_use_log(e.cache, news);
  if (appended) {
    if (*appended) // best effort: the news are in the log, for the next write to fold
      static_cast<void>(write_transaction(e, [](MDB_txn*) { return MDB_SUCCESS; }));
    return {};
  }
  log::write_once(LogLevel::info, "use-log:" + e.dir.string(),
                  appended.error().message + "; writing to the user tier instead");
  e.uses.restore(news.uses);
  const int rc =
      write_transaction(e, [&](MDB_txn* txn) { return add_counters_in(e, txn, counters); });
  if (rc != MDB_SUCCESS)
    return lmdb_error("counter update", rc, e.dir);
  return {};
}

Expected<void> LmdbStore::add_counters(const Stats& delta) {
  auto e = env();
  if (!writes(*e))
    return {};
  return tell_through_log(*e, delta);
}

Expected<void> LmdbStore::zero_counters() {
  auto e = env();
  if (!writes(*e))
    return Error(ErrorCode::read_only, "the cache is read-only: its counters cannot be zeroed");
  if (!e->has_dbs)
    return {};
  // mdb_drop(..., 0) empties the database and keeps it: one short write transaction, which
  // folds the use log first (its counters are dropped with the rest).
  const int rc = write_transaction(
      *e, [&](MDB_txn* txn) { return mdb_drop(txn, e->counters, 0); }, 0, UseLogFold::required);
  if (rc == k_use_log_held)
    return use_log_held_error(e->dir, "the counters were not zeroed");
  if (rc != MDB_SUCCESS)
    return lmdb_error("counter reset", rc, e->dir);
  return {};
}

Expected<Stats> LmdbStore::counters() {
  auto e = env();
  Stats stats;
  if (!e->has_dbs)
    return stats;
  int rc = MDB_SUCCESS;
  const UseNews news = read_use_log(e->cache, [&] {
    rc = e->read([&](MDB_txn* txn) {
      return scan(txn, e->counters, [&](const MDB_val& k, const MDB_val& v) {
        const std::string name(static_cast<const char*>(k.mv_data), k.mv_size);
        const auto sep = name.find('\x1f');
        if (sep != std::string::npos && v.mv_size == sizeof(std::uint64_t))
          stats.by_backend[name.substr(0, sep)][name.substr(sep + 1)] += as_u64(v);
      });
    });
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("counter read", rc, e->dir);
  stats.merge(news.counters);
  return stats;
}

} // namespace jitcache::detail
