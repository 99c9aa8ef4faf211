#pragma once

#include "core/access_log.hpp"
#include "core/cache_dir.hpp"
#include "core/env_gate.hpp"
#include "core/lmdb_store.hpp"

#include <lmdb.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace jitcache {

/// One open LMDB environment, shared by every LmdbStore of its directory in this process.
/// Internal to the user tier (the core/lmdb_*.cpp files).
struct LmdbStore::Env {
  MDB_env* env = nullptr;
  MDB_dbi entries = 0;      ///< digest -> encoded entry
  MDB_dbi counters = 0;     ///< "backend\x1fname" -> u64
  MDB_dbi access = 0;       ///< digest -> u64 last use (AccessLog::now_us())
  MDB_dbi meta = 0;         ///< "bytes" -> u64 stored size of all entries
  MDB_dbi records = 0;      ///< digest -> record (LmdbStore::get_record); not entries
  bool has_dbs = false;     // false: a read-only environment nobody has written yet
  bool has_records = false; // false: an environment no writer of this version has opened
  std::filesystem::path dir;
  CacheDir cache; ///< `dir`, opened once: every file jitcache itself touches there goes through it
  bool read_only = false;
  std::uint64_t max_size = 0; ///< size limit (0: none); the map never grows past map_bound()
  unsigned generation = 0;    ///< fork_generation() at open
  EnvGate gate;               ///< held shared while the environment is open
  /// lock.mdb (when LMDB uses it), kept open until after mdb_env_close (see open_env)
  int lock_fd = -1;
  std::shared_mutex resize_mutex; // transactions shared; map resizing exclusive
  std::atomic<std::uint64_t> corrupt{0};
  AccessLog uses;

  ~Env();

  /// Runs `body(txn)` in a read transaction that ends with the body (no commit: database
  /// handles must not be opened in it). The transaction comes from a small pool of reset ones:
  /// renewing one takes no lock, where beginning one takes LMDB's reader-table mutex, which
  /// every thread of every process with the environment open shares.
  template <typename Body> int read(Body&& body) {
    return transact(false, std::forward<Body>(body), true);
  }

  /// Runs `body(txn)` in a transaction, adopting a map grown by another process and growing the
  /// map when full. `body` returns an LMDB status; MDB_SUCCESS commits (write) or ends (read);
  /// `body` may run again after a growth, in a fresh transaction. A status that means the file
  /// is damaged is noted (see note_damage).
  template <typename Body> int transact(bool write, Body&& body, bool pooled = false) {
    for (int attempt = 0; attempt < k_max_grow_attempts; ++attempt) {
      int rc;
      {
        std::shared_lock<std::shared_mutex> lock(resize_mutex);
        MDB_txn* txn = pooled ? take_reader() : nullptr;
        rc = txn ? mdb_txn_renew(txn) : mdb_txn_begin(env, nullptr, write ? 0 : MDB_RDONLY, &txn);
        if (rc != MDB_SUCCESS && txn && pooled) {
          mdb_txn_abort(txn);
          txn = nullptr;
        } else if (rc == MDB_SUCCESS) {
          rc = body(txn);
          if (pooled) {
            mdb_txn_reset(txn);
            give_back_reader(txn);
          } else if (rc == MDB_SUCCESS) {
            // Read transactions outside the pool are committed too: that is what keeps
            // database handles opened in them (an abort would close them).
            rc = mdb_txn_commit(txn);
          } else {
            mdb_txn_abort(txn);
          }
        }
      }
      if (rc == MDB_MAP_RESIZED) {
        std::unique_lock<std::shared_mutex> lock(resize_mutex);
        mdb_env_set_mapsize(env, 0);
        continue;
      }
      if (rc == MDB_MAP_FULL) {
        if (!grow_map())
          return MDB_MAP_FULL;
        continue;
      }
      note_damage(rc);
      return rc;
    }
    return MDB_MAP_FULL;
  }

  /// Doubles the map, up to map_bound(max_size) when there is a limit (no transaction of this
  /// process may be running). False when LMDB refuses, or the map is at that bound.
  bool grow_map();

  /// A reset read transaction from the pool, or null when it is empty.
  MDB_txn* take_reader();
  /// Returns a reset read transaction to the pool (aborts it when the pool is full).
  void give_back_reader(MDB_txn* txn);

  /// When `rc` says the file is damaged, leaves a marker so that the next open moves the file
  /// aside (this environment cannot: other transactions may be using it), and warns once.
  void note_damage(int rc);

private:
  static constexpr int k_max_grow_attempts = 16;
  /// Idle readers kept: each keeps a reader slot (k_max_readers in all, shared by processes).
  static constexpr std::size_t k_pooled_readers = 8;
  std::mutex m_reader_mutex;
  std::vector<MDB_txn*> m_idle_readers;
};

/// LMDB reports a short write - what a full disk gives - as EIO. Returns ENOSPC for an EIO
/// when the filesystem holding `dir` has less free space than the `bytes` being written plus a
/// margin; `rc` otherwise.
int full_disk_or(int rc, const std::filesystem::path& dir, std::uint64_t bytes);

/// Whether an LMDB status means the data file itself is damaged.
bool is_damage(int rc);

/// An Error for an LMDB status: store_full for MDB_MAP_FULL and ENOSPC, read_only for EACCES,
/// EROFS and EPERM, corrupt for damage, io_error otherwise; the message names `what` and `dir`.
Error lmdb_error(const std::string& what, int rc, const std::filesystem::path& dir);

/// Creates an MDB_env with jitcache's settings (database and reader counts, `map_size`) and
/// opens it in `dir` with `flags`. On failure the env is closed and *out is null.
int create_env(MDB_env** out, const std::filesystem::path& dir, unsigned flags,
               std::size_t map_size);

/// Prepares `dir` for open and opens it (CacheDir): makes it (parents too, mode 0700) unless
/// `read_only` or the nearest existing ancestor belongs to another user (root's included only
/// when it is root's own: a process never creates anything in a directory of another user),
/// and turns `read_only` on, with one warning, when it cannot be written or belongs to someone
/// else. Errors: io_error (not a directory, a symbolic link, cannot create, absent and
/// read-only or not ours to create).
Expected<CacheDir> prepare_dir(const std::filesystem::path& dir, bool& read_only);

/// Opens the environment in the prepared directory `cache`: enters its gate, checks that
/// data.mdb and lock.mdb are absent or regular files (LMDB opens them by path: a symlink there
/// means the user tier is not used, and nothing is touched), backs the lock file with disk
/// blocks (a writer; a full disk makes it a reader, with one warning), opens LMDB - without a
/// lock file, read-only, when there is none or it is not fully backed (see open_env's comment on
/// readers without one) - checks that LMDB opened the files it checked, moves a damaged data
/// file aside (when no other process has it open), clears stale reader slots, and opens the
/// databases. A reader creates nothing. Errors as LmdbStore::open.
Expected<std::shared_ptr<LmdbStore::Env>> open_env(const CacheDir& cache, bool read_only,
                                                   const LmdbStore::Options& options);

} // namespace jitcache
