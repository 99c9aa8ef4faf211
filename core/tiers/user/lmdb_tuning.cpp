// LmdbStore's tuning records: the tuning database (core/tuning/tuning_record.hpp), a database of
// its own beside the entries, so that it can be listed and is never dropped to make room.
#include "core/tiers/user/lmdb_txn.hpp"

namespace jitcache::detail {

Expected<bool> LmdbStore::visit_tuning(const Digest& name,
                                       const std::function<void(std::string_view)>& use) {
  auto e = env();
  if (!e->has_tuning)
    return false;
  return visit_value(*e, e->tuning, name, use);
}

Expected<void> LmdbStore::put_tuning(const Digest& name, std::string_view bytes) {
  auto e = env();
  if (!writes(*e) || !e->has_tuning)
    return read_only_error(e->dir);
  const int rc = write_transaction(
      *e,
      [&](MDB_txn* txn) {
        MDB_val k = as_val(name), v{bytes.size(), const_cast<char*>(bytes.data())};
        return mdb_put(txn, e->tuning, &k, &v, 0);
      },
      bytes.size());
  if (rc != MDB_SUCCESS)
    return lmdb_error("write", rc, e->dir);
  return {};
}

Expected<bool> LmdbStore::remove_tuning(const Digest& name) {
  auto e = env();
  if (!writes(*e) || !e->has_tuning)
    return read_only_error(e->dir);
  bool removed = false;
  const int rc = write_transaction(*e, [&](MDB_txn* txn) {
    MDB_val k = as_val(name);
    const int r = mdb_del(txn, e->tuning, &k, nullptr);
    removed = r == MDB_SUCCESS;
    return r == MDB_NOTFOUND ? MDB_SUCCESS : r;
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("remove", rc, e->dir);
  return removed;
}

Expected<void>
LmdbStore::for_each_tuning(const std::function<void(const Digest&, std::string_view)>& fn) {
  auto e = env();
  if (!e->has_tuning)
    return {};
  const int rc = e->read([&](MDB_txn* txn) {
    return scan(txn, e->tuning, [&](const MDB_val& k, const MDB_val& v) {
      Digest name;
      if (k.mv_size == name.bytes.size())
        std::memcpy(name.bytes.data(), k.mv_data, k.mv_size);
      fn(name, {static_cast<const char*>(v.mv_data), v.mv_size});
    });
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("scan", rc, e->dir);
  return {};
}

Expected<std::uint64_t> LmdbStore::clear_tuning() {
  auto e = env();
  if (!writes(*e) || !e->has_tuning)
    return read_only_error(e->dir);
  std::uint64_t count = 0;
  const int rc = write_transaction(*e, [&](MDB_txn* txn) {
    MDB_stat st{};
    int r = mdb_stat(txn, e->tuning, &st);
    count = st.ms_entries;
    return r == MDB_SUCCESS ? mdb_drop(txn, e->tuning, 0) : r;
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("clear", rc, e->dir);
  return count;
}

} // namespace jitcache::detail
