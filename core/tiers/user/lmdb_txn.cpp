#include "core/tiers/user/lmdb_txn.hpp"

#include "core/tiers/user/eviction.hpp"

#include <algorithm>
#include <climits>

namespace jitcache::detail {

namespace {

// Named for what it counts: a tier that kept another measure under another name counts again.
constexpr char k_total_key[] = "footprint";

} // namespace

std::uint64_t footprint(LmdbStore::Env& e, std::uint64_t value_bytes) {
  return entry_footprint(value_bytes, e.page_size);
}

Error read_only_error(const std::filesystem::path& dir) {
  return Error(ErrorCode::read_only, "user tier " + dir.string() + " is read-only");
}

EntryUse stored_use(LmdbStore::Env& e, MDB_txn* txn, const Digest& key) {
  MDB_val k = as_val(key), v;
  if (mdb_get(txn, e.access, &k, &v) != MDB_SUCCESS)
    return {};
  return decode_use(key, {static_cast<const char*>(v.mv_data), v.mv_size});
}

int put_use(LmdbStore::Env& e, MDB_txn* txn, const Digest& key, std::uint64_t last_use_us,
            std::uint64_t hits) {
  const std::string bytes = encode_use(
      key, last_use_us,
      static_cast<std::uint32_t>(std::min<std::uint64_t>(hits, UINT32_MAX))); // saturates
  MDB_val k = as_val(key), v{bytes.size(), const_cast<char*>(bytes.data())};
  return mdb_put(txn, e.access, &k, &v, 0);
}

int apply_uses(LmdbStore::Env& e, MDB_txn* txn, const AccessLog::Batch& batch) {
  for (const auto& [key, use] : batch) {
    MDB_val k = as_val(key), v;
    if (mdb_get(txn, e.entries, &k, &v) != MDB_SUCCESS)
      continue;
    // Read and added to inside the write transaction, which LMDB runs one at a time across
    // processes: batches of processes hitting at once all count.
    const EntryUse stored = stored_use(e, txn, key);
    if (int r = put_use(e, txn, key, std::max(stored.last_use_us.value_or(0), use.when_us),
                        std::uint64_t(stored.hits.value_or(0)) + use.hits);
        r != MDB_SUCCESS)
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
