#include "core/tiers/user/lmdb_txn.hpp"

#include "core/tiers/user/eviction.hpp"

namespace jitcache::detail {

namespace {

// Named for what it counts: a tier that kept another measure under another name counts again.
constexpr char k_total_key[] = "footprint";

} // namespace

std::uint64_t footprint(LmdbStore::Env& e, std::uint64_t value_bytes) {
  MDB_stat st{};
  mdb_env_stat(e.env, &st);
  return entry_footprint(value_bytes, st.ms_psize);
}

Error read_only_error(const std::filesystem::path& dir) {
  return Error(ErrorCode::read_only, "user tier " + dir.string() + " is read-only");
}

int apply_uses(LmdbStore::Env& e, MDB_txn* txn, const AccessLog::Batch& batch) {
  for (auto [key, when] : batch) {
    MDB_val k = as_val(key), v;
    if (mdb_get(txn, e.entries, &k, &v) != MDB_SUCCESS)
      continue;
    MDB_val t = as_val(when);
    if (int r = mdb_put(txn, e.access, &k, &t, 0); r != MDB_SUCCESS)
      return r;
  }
  return MDB_SUCCESS;
}

std::uint64_t stored_total(LmdbStore::Env& e, MDB_txn* txn) {
  return stored_total(txn, e.meta, e.entries);
}

std::uint64_t stored_total(MDB_txn* txn, MDB_dbi meta, MDB_dbi entries) {
  MDB_val k{sizeof k_total_key - 1, const_cast<char*>(k_total_key)}, v;
  if (mdb_get(txn, meta, &k, &v) == MDB_SUCCESS)
    return as_u64(v);
  std::uint64_t total = 0;
  MDB_stat st{};
  mdb_env_stat(mdb_txn_env(txn), &st);
  scan(txn, entries, [&](const MDB_val&, const MDB_val& value) {
    total += entry_footprint(value.mv_size, st.ms_psize);
  });
  return total;
}

int set_total(LmdbStore::Env& e, MDB_txn* txn, std::uint64_t total) {
  MDB_val k{sizeof k_total_key - 1, const_cast<char*>(k_total_key)}, v = as_val(total);
  return mdb_put(txn, e.meta, &k, &v, 0);
}

} // namespace jitcache::detail
