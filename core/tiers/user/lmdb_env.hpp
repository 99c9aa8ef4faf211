#pragma once

#include "core/support/fault_guard.hpp"
#include "core/tiers/user/access_log.hpp"
#include "core/tiers/user/cache_dir.hpp"
#include "core/tiers/user/env_gate.hpp"
#include "core/tiers/user/lmdb_store.hpp"

#include <lmdb.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace jitcache::detail {

/// The file a transaction that found the data file damaged leaves in its directory: the next
/// open moves the data file aside.
inline constexpr const char* k_damage_marker = "damaged";
/// transact's status for a write that needed the map to grow past grow_map's cap: the tree is
/// damaged. Outside LMDB's codes and errno values, like fault::k_fault.
constexpr int k_runaway = -30601;
/// transact's status on a poisoned environment (see Env::poison), returned without LMDB.
constexpr int k_poisoned = -30602;

/// Whether an LMDB status means the data file itself is damaged (fault::k_fault, k_runaway and
/// k_poisoned included).
bool is_damage(int rc);

/// mdb_strerror, and words for fault::k_fault, k_runaway and k_poisoned.
std::string describe(int rc);

/// One open LMDB environment, shared by every LmdbStore of its directory in this process.
/// Internal to the user tier (the core/lmdb_*.cpp files).
struct LmdbStore::Env {
  /// The handles of the databases (see the members of the same names).
  struct Databases {
    MDB_dbi entries = 0, counters = 0, access = 0, meta = 0, records = 0, tuning = 0;
  };

  MDB_env* env = nullptr;
  MDB_dbi entries = 0;      ///< digest -> encoded entry
  MDB_dbi counters = 0;     ///< "backend\x1fname" -> u64
  MDB_dbi access = 0;       ///< digest -> u64 last use (AccessLog::now_us())
  MDB_dbi meta = 0;         ///< "bytes" -> u64 stored size of all entries
  MDB_dbi records = 0;      ///< digest -> record (LmdbStore::get_record); not entries
  MDB_dbi tuning = 0;       ///< digest -> tuning record (core/tuning/tuning_record.hpp)
  bool has_dbs = false;     // false: a read-only environment nobody has written yet
  bool has_records = false; // false: an environment no writer of this version has opened
  bool has_tuning = false;  // the same, for the tuning records
  std::filesystem::path dir;
  CacheDir cache; ///< `dir`, opened once: every file jitcache itself touches there goes through it
  bool read_only = false;
  std::uint64_t max_size = 0; ///< size limit (0: none); the map never grows past map_bound()
  unsigned page_size = 4096;  ///< the data file's, read once at open (`env` may be replaced)
  unsigned generation = 0;    ///< fork_generation() at open
  EnvGate gate;               ///< held shared while the environment is open
  /// lock.mdb (when LMDB uses it), kept open until after mdb_env_close (see open_env)
  int lock_fd = -1;
  std::shared_mutex resize_mutex; // transactions shared; map resizing exclusive
  AccessLog uses;
  bool pages_checked = false;      ///< page by page, at open or before the first write
  std::once_flag write_check_once; ///< check_before_first_write (core/tiers/user/lmdb_health.hpp)

  ~Env();

  /// Runs `body(txn)` in a read transaction that ends with the body (no commit: database
  /// handles must not be opened in it). The transaction comes from a small pool of reset ones:
  /// renewing one takes no lock, where beginning one takes LMDB's reader-table mutex, which
  /// every thread of every process with the environment open shares.
  template <typename Body> int read(Body&& body) {
    return transact(false, std::forward<Body>(body), true);
  }

  /// Runs `body(txn)` in a transaction, adopting a map grown by another process and growing the
  /// map when full (a write of about `bytes`; see grow_map). `body` returns an LMDB status;
  /// MDB_SUCCESS commits (write) or ends (read); `body` may run again after a growth, in a
  /// fresh transaction. Every LMDB call runs in a fault::guarded region: a fault or an LMDB
  /// assertion returns fault::k_fault and poisons the environment; so does a status that means
  /// the file is damaged (see is_damage). A poisoned environment returns k_poisoned at once,
  /// without touching LMDB. Write transactions of this process queue on a mutex of ours
  /// first (LMDB allows one at a time anyway), so that none waits on LMDB's writer mutex for
  /// a transaction that faulted.
  template <typename Body>
  int transact(bool write, Body&& body, bool pooled = false, std::uint64_t bytes = 0) {
    std::unique_lock<std::mutex> writer(m_writer_mutex, std::defer_lock);
    if (write) {
      writer.lock();
      if (reading_until_write.load(std::memory_order_acquire))
        if (const int rc = open_for_writing(); rc != MDB_SUCCESS)
          return rc;
    }
    for (int attempt = 0; attempt < k_max_grow_attempts; ++attempt) {
      if (poisoned.load(std::memory_order_acquire))
        return k_poisoned;
      int rc;
      {
        std::shared_lock<std::shared_mutex> lock(resize_mutex);
        MDB_txn* txn = pooled ? take_reader() : nullptr;
        bool keep = false; // a reset pooled transaction to give back
        rc = fault::guarded([&] { return run_transaction(write, txn, keep, body); });
        if (rc != fault::k_fault && keep)
          give_back_reader(txn);
      }
      if (rc == MDB_MAP_RESIZED) {
        std::unique_lock<std::shared_mutex> lock(resize_mutex);
        rc = fault::guarded([&] { return mdb_env_set_mapsize(env, 0); });
        if (rc == MDB_SUCCESS)
          continue;
      } else if (rc == MDB_MAP_FULL) {
        const int grown = grow_map(bytes);
        if (grown == MDB_SUCCESS)
          continue;
        rc = grown == k_runaway ? k_runaway : MDB_MAP_FULL;
      }
      if (rc == fault::k_fault)
        poison(fault::last_fault());
      else if (is_damage(rc))
        poison(describe(rc));
      return rc;
    }
    return MDB_MAP_FULL;
  }

  /// Grows the map for a write of about `bytes` (no transaction of this process may be
  /// running): doubles it, up to map_bound(max_size) when there is a size limit (a data file
  /// already at or over that bound, left by a larger limit: up to the file plus 1 MiB and twice
  /// `bytes`, room for the evictions that bring it under the limit), and up to a
  /// cap of 4 times the data file plus 2 times `bytes` plus 64 MiB (or the initial map size,
  /// when larger). A healthy write never needs more than the file plus twice its bytes
  /// (copy-on-write pages, the free list); past the cap the transaction is walking a damaged
  /// tree, which would otherwise grow the map, the file and LMDB's page lists without bound.
  /// Returns MDB_SUCCESS; MDB_MAP_FULL at the size limit's bound (the caller makes room);
  /// k_runaway past the cap; or LMDB's status when it refuses.
  int grow_map(std::uint64_t bytes);

  /// Whether `env` is opened read-only (MDB_RDONLY) in an environment this process may write:
  /// its first write transaction opens the writable one (open_for_writing). Opening LMDB
  /// writable allocates its write buffers (3 MiB), which a process that only hits never uses
  /// (0.1 ms of a CUDA process's first hit on an H200 host).
  std::atomic<bool> reading_until_write{false};

  /// Takes the handles in `opened` where they differ from the members (a handle read outside a
  /// transaction, as some are, is never written when it stays the same).
  void adopt(const Databases& opened);

  /// A reset read transaction from the pool, or null when it is empty.
  MDB_txn* take_reader();
  /// Returns a reset read transaction to the pool (aborts it when the pool is full).
  void give_back_reader(MDB_txn* txn);

  /// After a contained fault (or a status meaning damage): this process never touches the
  /// environment again. Nothing of LMDB's is closed or aborted (its state is unknown; the
  /// handles leak on purpose). Releases what would stop other processes: LMDB's writer and
  /// reader-table mutexes when this thread holds them, this process's locks on the lock file
  /// (so that the next process to open it alone re-initialises it), and the gate (so that
  /// another process can move the file aside). Writes the damage marker (when writable), so
  /// that the next open moves the file aside, and warns once. Thread-safe; later calls do
  /// nothing. With `damaged` false (the file is sound, the environment unusable), no marker is
  /// written and the warning says the tier is not used, not that it is damaged.
  void poison(const std::string& why, bool damaged = true);

  std::atomic<bool> poisoned{false};
  /// Set by poison() once its locks, its gate and the damage marker are given up: until then an
  /// open of the same directory waits (LmdbStore::open), or poison's close of the lock file
  /// would drop the new environment's locks.
  std::atomic<bool> given_up{false};
  /// Initial map size (LmdbStore::Options::map_size), the floor of grow_map's cap.
  std::size_t initial_map_size = 0;

private:
  template <typename Body> int run_transaction(bool write, MDB_txn*& txn, bool& keep, Body& body) {
    const bool pooled = txn != nullptr;
    int rc =
        pooled ? mdb_txn_renew(txn) : mdb_txn_begin(env, nullptr, write ? 0 : MDB_RDONLY, &txn);
    if (rc != MDB_SUCCESS) {
      if (pooled)
        mdb_txn_abort(txn);
      return rc;
    }
    rc = body(txn);
    if (pooled) {
      mdb_txn_reset(txn);
      keep = true;
    } else if (rc == MDB_SUCCESS) {
      // Read transactions outside the pool are committed too: that is what keeps database
      // handles opened in them (an abort would close them).
      rc = mdb_txn_commit(txn);
    } else {
      mdb_txn_abort(txn);
    }
    return rc;
  }

  /// Makes `env` writable where reading_until_write: opens the environment again, writable,
  /// with every database (opened in a read transaction where they exist, so that no reader of
  /// this process waits for another process's store; made in a write transaction otherwise).
  /// No LMDB environment of this Env is closed before the Env is: closing one drops this
  /// process's locks on lock.mdb, which the others hold too (POSIX locks belong to the
  /// process). LMDB closes the lock file itself when the writable open fails past its locks,
  /// so they are taken again (restore_locks). The caller holds m_writer_mutex. Returns
  /// MDB_SUCCESS; k_poisoned on a poisoned environment; or the status that stopped it (the
  /// environment is poisoned when it means damage or when its locks could not be taken again,
  /// and stays read-only otherwise).
  int open_for_writing();

  /// After a failed writable open: takes this process's locks on lock.mdb again through
  /// `lock_fd`, as LMDB holds them for an open environment (shared on byte 0, waiting for a
  /// process that initialises the file; exclusive on the byte at this process's id, which
  /// tells others that its reader slots are live). Returns whether both are held.
  bool restore_locks();

  static constexpr int k_max_grow_attempts = 16;
  /// Idle readers kept: each keeps a reader slot (k_max_readers in all, shared by processes).
  static constexpr std::size_t k_pooled_readers = 8;
  std::mutex m_reader_mutex;
  std::vector<MDB_txn*> m_idle_readers;
  std::mutex m_writer_mutex; // see transact
  /// The read-only environment once `env` is writable, and a writable one whose databases could
  /// not be opened yet: closed with this Env (see open_for_writing).
  MDB_env* m_read_env = nullptr;
  MDB_env* m_writable = nullptr;
};

/// LMDB reports a short write - what a full disk gives - as EIO. Returns ENOSPC for an EIO
/// when the filesystem holding `dir` has less free space than the `bytes` being written plus a
/// margin; `rc` otherwise.
int full_disk_or(int rc, const std::filesystem::path& dir, std::uint64_t bytes);

/// An Error for an LMDB status: store_full for MDB_MAP_FULL and ENOSPC, read_only for EACCES,
/// EROFS and EPERM, corrupt for damage, io_error otherwise; the message names `what` and `dir`.
Error lmdb_error(const std::string& what, int rc, const std::filesystem::path& dir);

/// LMDB opens data.mdb and lock.mdb by path, following symbolic links. Why it must not open them
/// in `cache`: one is a symbolic link, or not a regular file of one link (the message names it);
/// empty when both are absent or fine.
std::string unsafe_files(const CacheDir& cache);

/// Moves the data file of `cache` aside (data.mdb.corrupt-<time>, the only one kept) and removes
/// the damage marker, so that the next open starts a fresh environment; the lock file stays
/// (the next open initialises it afresh). Warns once, naming `why`. The caller holds the gate
/// exclusively (no process has the files open).
void quarantine(const CacheDir& cache, const std::string& why);

/// Like quarantine, but removes the data file instead of keeping it (clearing the tier).
/// Errors: io_error naming the file that could not be removed.
Expected<void> remove_data_files(const CacheDir& cache);

/// Opens the databases of an environment into `out` in `txn` (entries and counters; the others
/// too where `writer`), with `create` (0 or MDB_CREATE). Returns LMDB's status.
int open_databases(MDB_txn* txn, unsigned create, bool writer, LmdbStore::Env::Databases& out);

/// After a fault in an environment that is not an Env (create_env, compaction): releases what
/// the faulting thread may hold of LMDB's lock file (see Env::poison); the environment itself
/// is never touched again.
void forsake_env(const std::filesystem::path& dir);

/// Creates an MDB_env with jitcache's settings (database and reader counts, `map_size`, the
/// assertion callback that turns LMDB's assertions inside a fault::guarded region into
/// fault::k_fault) and opens it in `dir` with `flags`, guarded. On failure *out is null: the
/// env is closed, or after a fault (fault::k_fault) left untouched (see forsake_env).
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

} // namespace jitcache::detail
