// LmdbStore's records: small values kept beside the entries (manifests, runtime identities).
#include "core/tiers/user/lmdb_txn.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <vector>

namespace jitcache::detail {

Expected<std::optional<std::string>> LmdbStore::get_record(const Digest& name) {
  std::optional<std::string> found;
  auto seen = visit_record(name, [&](std::string_view bytes) { found.emplace(bytes); });
  if (!seen)
    return std::move(seen).error();
  return found;
}

Expected<bool> visit_value(LmdbStore::Env& e, MDB_dbi dbi, const Digest& name,
                           const std::function<void(std::string_view)>& use) {
  bool found = false;
  const int rc = e.read([&](MDB_txn* txn) {
    MDB_val k = as_val(name), v;
    const int r = mdb_get(txn, dbi, &k, &v);
    if (r == MDB_SUCCESS) {
      // Guarded, unlike an entry's use (see visit): a record is not verified before it is
      // used, so reading it may be the first touch of a damaged value's pages.
      use({static_cast<const char*>(v.mv_data), v.mv_size});
      found = true;
    }
    return r;
  });
  if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
    return lmdb_error("read", rc, e.dir);
  return found;
}

Expected<EntryUse> LmdbStore::entry_use(const Digest& key) {
  auto uses = entry_uses({key});
  if (!uses)
    return std::move(uses).error();
  return uses->front();
}

Expected<std::vector<EntryUse>> LmdbStore::entry_uses(const std::vector<Digest>& keys) {
  auto e = env();
  std::vector<EntryUse> uses(keys.size());
  if (!e->has_dbs || e->read_only) // only writers keep uses (open_env)
    return uses;
  Expected<bool> seen = false;
  const UseNews news = read_use_log(e->cache, [&] {
    for (std::size_t i = 0; i < keys.size() && seen; ++i)
      seen = visit_value(*e, e->access, keys[i],
                         [&](std::string_view bytes) { uses[i] = decode_use(keys[i], bytes); });
  });
  if (!seen)
    return std::move(seen).error();
  std::map<Digest, AccessLog::Use> told(news.uses.begin(), news.uses.end());
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (auto it = told.find(keys[i]); it != told.end()) { // not yet folded: as the fold adds it
      EntryUse& use = uses[i];
      use.last_use_us = std::max(use.last_use_us.value_or(0), it->second.when_us);
      use.hits = static_cast<std::uint32_t>(std::min<std::uint64_t>(
          std::uint64_t(use.hits.value_or(0)) + it->second.hits, UINT32_MAX));
    }
  return uses;
}

Expected<bool> LmdbStore::visit_record(const Digest& name,
                                       const std::function<void(std::string_view)>& use) {
  auto e = env();
  if (!e->has_records)
    return false;
  return visit_value(*e, e->records, name, use);
}

Expected<void>
LmdbStore::for_each_record(const std::function<void(const Digest&, std::string_view)>& fn) {
  auto e = env();
  if (!e->has_records)
    return {};
  const int rc = e->read([&](MDB_txn* txn) {
    return scan(txn, e->records, [&](const MDB_val& k, const MDB_val& v) {
      Digest name;
      if (k.mv_size == name.bytes.size()) {
        std::memcpy(name.bytes.data(), k.mv_data, k.mv_size);
        fn(name, {static_cast<const char*>(v.mv_data), v.mv_size});
      }
    });
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("scan", rc, e->dir);
  return {};
}

Expected<void> LmdbStore::put_records(const Records& records) {
  auto e = env();
  if (!writes(*e) || !e->has_records)
    return read_only_error(e->dir);
  std::size_t bytes = 0;
  for (const auto& [name, value] : records)
    bytes += value.size();
  const int rc = write_transaction(
      *e,
      [&](MDB_txn* txn) {
        // Records only speed lookups up: when there would be too many, all of them go.
        MDB_stat st{};
        int r = mdb_stat(txn, e->records, &st);
        if (r == MDB_SUCCESS && st.ms_entries + records.size() > k_max_records)
          r = mdb_drop(txn, e->records, 0);
        for (auto it = records.begin(); r == MDB_SUCCESS && it != records.end(); ++it) {
          MDB_val k = as_val(it->first), v{it->second.size(), const_cast<char*>(it->second.data())};
          r = mdb_put(txn, e->records, &k, &v, 0);
        }
        return r;
      },
      bytes);
  if (rc != MDB_SUCCESS)
    return lmdb_error("write", rc, e->dir);
  return {};
}

} // namespace jitcache::detail
