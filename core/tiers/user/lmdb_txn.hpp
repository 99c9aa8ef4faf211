#pragma once

// What the user tier's files (lmdb_store.cpp, lmdb_records.cpp, lmdb_counters.cpp,
// lmdb_eviction.cpp) share: LMDB values, scans, the write transaction and the stored total.

#include "core/tiers/user/lmdb_env.hpp"
#include "core/tiers/user/lmdb_health.hpp"
#include "core/tiers/user/use_log.hpp"

#include <jitcache/stats.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string_view>

namespace jitcache::detail {

inline MDB_val as_val(const Digest& d) {
  return MDB_val{d.bytes.size(), const_cast<std::uint8_t*>(d.bytes.data())};
}

inline MDB_val as_val(std::uint64_t& v) {
  return MDB_val{sizeof v, &v};
}

/// A stored u64; 0 when the value is not one.
inline std::uint64_t as_u64(const MDB_val& v) {
  std::uint64_t value = 0;
  if (v.mv_size == sizeof value)
    std::memcpy(&value, v.mv_data, sizeof value);
  return value;
}

/// The error of a write to a user tier that is read-only.
Error read_only_error(const std::filesystem::path& dir);

/// Calls `fn(key, value)` for every record of `dbi`, in key order. Returns an LMDB status.
template <typename Fn> int scan(MDB_txn* txn, MDB_dbi dbi, Fn&& fn) {
  MDB_cursor* cursor = nullptr;
  int r = mdb_cursor_open(txn, dbi, &cursor);
  if (r != MDB_SUCCESS)
    return r;
  MDB_val k, v;
  for (r = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); r == MDB_SUCCESS;
       r = mdb_cursor_get(cursor, &k, &v, MDB_NEXT))
    fn(k, v);
  mdb_cursor_close(cursor);
  return r == MDB_NOTFOUND ? MDB_SUCCESS : r;
}

/// Runs `use` on the value stored under `name` in `dbi`, in place inside a read transaction,
/// and says whether there was one (lmdb_records.cpp). `use` runs guarded: the value is not
/// verified before it is used, so reading it may be the first touch of a damaged value's pages.
/// Errors: lmdb_error.
Expected<bool> visit_value(LmdbStore::Env& e, MDB_dbi dbi, const Digest& name,
                           const std::function<void(std::string_view)>& use);

/// What `txn` holds of the use of the entry `key` (nothing known when there is no record).
EntryUse stored_use(LmdbStore::Env& e, MDB_txn* txn, const Digest& key);

/// Keeps `last_use_us` and `hits` (at most UINT32_MAX) as the use of the entry `key` (see
/// encode_use). Returns an LMDB status.
int put_use(LmdbStore::Env& e, MDB_txn* txn, const Digest& key, std::uint64_t last_use_us,
            std::uint64_t hits);

/// Writes the recorded uses of entries that still exist: the latest time, and the hits added to
/// those stored. Returns an LMDB status.
int apply_uses(LmdbStore::Env& e, MDB_txn* txn, const AccessLog::Batch& batch);

/// What an entry whose value has `value_bytes` takes in `e`'s data file (entry_footprint).
std::uint64_t footprint(LmdbStore::Env& e, std::uint64_t value_bytes);

/// Adds `delta` to the counters inside `txn` (lmdb_counters.cpp). Returns an LMDB status.
int add_counters_in(LmdbStore::Env& e, MDB_txn* txn, const Stats& delta);

/// Called when a write found the map full at its bound (a size limit: see file_bound), before
/// it is tried again: evicts least recently used entries, in a write transaction of its own,
/// until the stored entries take room for an entry of `bytes` (twice as much for each further
/// `round`) below eviction_target(limit); drops every record when no entry is left to evict
/// (lmdb_eviction.cpp). Returns whether it freed anything.
bool make_room(LmdbStore::Env& e, std::uint64_t bytes, int round);

/// How a write transaction folds the use log: when it can have it (a log another process holds
/// waits for the next fold), or as a condition of the change (zeroing the counters: a log left
/// behind would bring its counters back at the next fold), which then fails with
/// k_use_log_held.
enum class UseLogFold { if_free, required };

/// write_transaction's status when UseLogFold::required and the log was refused (see
/// TakenUseLog::refused). Outside LMDB's codes and errno values, like k_poisoned.
constexpr int k_use_log_held = -30603;

/// A write transaction running `body(txn)` (of about `bytes`) that also writes the uses
/// recorded since the last one, and folds the use log (see use_log.hpp: its news are written
/// first, so that eviction sees them, and the log is removed once the transaction commits).
/// The uses are kept for the next write when this one fails, and the log stays. Under a size
/// limit, a map full at its bound makes room (make_room) and tries again, a few times. Returns
/// an LMDB status (ENOSPC for a short write on a full disk), or k_use_log_held (`fold`).
template <typename Body>
int write_transaction(LmdbStore::Env& e, Body&& body, std::uint64_t bytes = 0,
                      UseLogFold fold = UseLogFold::if_free) {
  // Writing into a damaged tree is what crashes LMDB or grows it without bound.
  if (const int rc = check_before_first_write(e); rc != MDB_SUCCESS)
    return rc;
  constexpr int k_room_rounds = 4;
  const AccessLog::Batch uses = e.uses.take();
  const auto attempt = [&] {
    TakenUseLog log; // released after each attempt: make_room writes between attempts
    bool taken = false;
    const int rc = e.transact(
        true,
        [&](MDB_txn* txn) {
          if (!taken) // taken once LMDB's writer lock is held (a body run again keeps it)
            log = TakenUseLog::take(e.cache);
          taken = true;
          if (fold == UseLogFold::required && log.refused())
            return k_use_log_held;
          int r = add_counters_in(e, txn, log.news().counters);
          if (r == MDB_SUCCESS)
            r = apply_uses(e, txn, log.news().uses);
          if (r == MDB_SUCCESS)
            r = apply_uses(e, txn, uses);
          return r == MDB_SUCCESS ? body(txn) : r;
        },
        false, bytes);
    if (rc == MDB_SUCCESS)
      log.remove();
    return rc;
  };
  int rc = attempt();
  for (int round = 0;
       rc == MDB_MAP_FULL && e.max_size && round < k_room_rounds && make_room(e, bytes, round);
       ++round)
    rc = attempt();
  if (rc != MDB_SUCCESS)
    e.uses.restore(uses);
  return full_disk_or(rc, e.dir, bytes);
}

/// Tells the tier `counters` and the uses recorded since its last write through the use log
/// (use_log.hpp), without a write transaction; folds the log with one when it has grown to
/// k_use_log_fold_at. When the log cannot take them (a full disk, a log that is not a file),
/// writes them in a write transaction instead (lmdb_counters.cpp). Errors: lmdb_error of that
/// transaction (the uses are then kept for the next write).
Expected<void> tell_through_log(LmdbStore::Env& e, const Stats& counters);

/// What all entries take in the data file (the sum of their footprints), kept in "meta" by
/// every write; counted once for a tier written before it was kept.
std::uint64_t stored_total(LmdbStore::Env& e, MDB_txn* txn);
/// Like stored_total, with the "meta" and "entries" databases named.
std::uint64_t stored_total(MDB_txn* txn, MDB_dbi meta, MDB_dbi entries);
/// Keeps `total` as the stored size of all entries. Returns an LMDB status.
int set_total(LmdbStore::Env& e, MDB_txn* txn, std::uint64_t total);

/// When `total` (the stored size with `stored` just written) is over `limit`, removes least
/// recently used entries other than `stored` inside `txn` until it is at most
/// eviction_target(limit), lowering `total`, adding to `pruned` and counting them
/// (lmdb_eviction.cpp). Returns an LMDB status.
int evict_over_limit(LmdbStore::Env& e, MDB_txn* txn, std::uint64_t& total,
                     const std::optional<std::uint64_t>& limit, const Digest& stored,
                     LmdbStore::Pruned& pruned);

} // namespace jitcache::detail
