#pragma once

#include "core/support/fs_check.hpp"

#include "core/tiers/entry_codec.hpp"
#include "core/tiers/user/access_log.hpp"
#include "core/tiers/user/user_tier.hpp"

#include <jitcache/stats.hpp>
#include <jitcache/store.hpp>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace jitcache::detail {

/// How to open the user tier's LMDB environment (LmdbStore::Options).
struct LmdbOptions {
  /// Initial map size; the map doubles whenever it is full.
  std::size_t map_size = std::size_t(1) << 30;
  /// JITCACHE_MAX_SIZE: the most bytes the stored entries may take in the data file, counted
  /// as entry_footprint() does; nullopt = no limit. The data file stays within file_bound().
  std::optional<std::uint64_t> max_size;
  /// How the directory's filesystem is examined (tests pretend a network filesystem).
  FilesystemProbe probe = &probe_filesystem;
  /// The caller has just probed the directory and found it on a local filesystem: open() does
  /// not probe it again (nor a reopen of the same directory).
  bool probed_local = false;
};

/// The user tier: an LMDB environment in a directory (node-local; never on a network FS).
///
/// LMDB's rules kept here: one environment per directory per process (shared between
/// LmdbStore objects through a registry); short write transactions only (compiles happen
/// outside); values copied out of the read transaction before it ends; the map grows on
/// MDB_MAP_FULL and adopts a size grown by another process (MDB_MAP_RESIZED); a child after
/// fork() opens its own environment and never touches the parent's; stale reader slots of dead
/// processes are cleared at open. Entries are verified on every read; an entry that fails
/// verification is reported as a miss, and logged and counted once per process (until it is
/// written again). A data file that LMDB rejects, that
/// is shorter than its own metadata says, or that a transaction found damaged, is moved aside
/// (data.mdb.corrupt-<time>) and a fresh one started, once no other process has it open (see
/// EnvGate). Every LMDB call runs in a fault::guarded region: a SIGSEGV, SIGBUS or LMDB
/// assertion raised by a damaged file poisons the environment (see Env::poison): its
/// operations then fail as corrupt without touching LMDB, in every LmdbStore sharing it; a
/// later open() in this process opens a fresh environment, moving the file aside when no other
/// process has it open, or fails as corrupt (the caller goes on without the user tier).
///
/// With a size limit, a put that takes the stored entries over it evicts the least recently
/// used ones (down to 90% of the limit) in the same transaction. Entries count the pages they
/// take; the map is never grown past map_bound(limit), and a write that finds it full there
/// evicts more first (make_room); a data file found over file_bound(limit) by an open that has
/// the directory to itself is compacted first (never waiting for other processes). Uses are
/// recorded in memory on hits and written with the next write (see AccessLog), never one write per
/// hit; a process with nothing else to write appends them, and its counters, to the use log
/// (see use_log.hpp), which the next write transaction of any process folds in.
class LmdbStore final : public UserTier {
public:
  using Options = LmdbOptions;

  /// Opens (creating the directory, parents too, mode 0700, unless `read_only`) the environment
  /// in `dir`. Opened read-only instead, with one warning, when the directory cannot be written,
  /// is owned by another user, or is writable by group or others. Errors: io_error naming the
  /// path and the reason (not a directory, no permission, gate wait ran out); unsupported when
  /// `dir` is on a network filesystem (the message names it; nothing is created there);
  /// store_full when the disk cannot hold LMDB's lock file; corrupt when the data file is
  /// damaged and cannot be moved aside now.
  static Expected<std::shared_ptr<LmdbStore>> open(const std::filesystem::path& dir, bool read_only,
                                                   const Options& options = {});
  /// The last handle of an environment writes the uses recorded since its last write.
  ~LmdbStore() override;

  std::string name() const override { return "user"; }
  bool writable() const override;
  Expected<std::optional<Entry>> get(const Digest& key) override;
  /// Like get(), without copying: runs `use` on the stored entry, verified, in place inside a
  /// read transaction, and says whether it did. An entry failing verification is damaged the
  /// first time this process reads it (warned about once), a miss after that until it is
  /// written again. `use` must not call this store.
  Expected<Visit> visit(const Digest& key,
                        const std::function<void(const EntryView&)>& use) override;
  /// Like visit(), without it counting as a use (no hit counted, no later use time): for what
  /// only looks at entries (`jitcache list`, `export`, `remote push`).
  Expected<Visit> peek(const Digest& key, const std::function<void(const EntryView&)>& use);
  /// Errors as Store::put; store_full also when the entry alone is larger than the size limit.
  Expected<void> put(const Digest& key, const Entry& entry) override;
  Expected<bool> remove(const Digest& key) override;
  Expected<void> for_each(const std::function<void(const Item&)>& fn) override;

  /// Like put(), and adds `counters` in the same write transaction: the entry and its counters
  /// are stored together or not at all (a compile is counted with the binary it produced).
  Expected<void> put(const Digest& key, const Entry& entry, const Stats& counters) override;

  /// Adds `delta` to the counters kept for the environment, with the uses recorded since the
  /// last write: appended to the use log (no write transaction; see use_log.hpp), or written
  /// in one when the log cannot take them. Nothing when there is nothing to tell.
  Expected<void> add_counters(const Stats& delta) override;
  /// Reads the counters kept in the environment and those in the use log not yet folded.
  Expected<Stats> counters() override;
  /// Sets every counter kept in the environment back to zero (`jitcache stats --zero`); the
  /// entries and what they record of their use are kept. Errors: io_error (LMDB's, with the
  /// folder), read_only when this store does not write.
  Expected<void> zero_counters();
  /// Records: small values kept beside the entries, by name, that speed up finding them
  /// (manifests of the files a key was built from, runtime identities). Not entries: not
  /// listed, counted, verified or size-limited; all of them are dropped when there would be
  /// more than k_max_records, and by clear(). A miss is an empty optional; bytes are returned
  /// as stored.
  Expected<std::optional<std::string>> get_record(const Digest& name);
  /// When the entry of `key` was last used (stored or hit) and how often it was hit, as far as
  /// this tier has been told: AccessLog tells hits in batches, with the next write of each
  /// process and at the latest when its last handle closes (a process killed before that loses
  /// its batch), the batches of processes that wrote nothing else through the use log (counted
  /// here before they are folded). Each part is empty when not known (a read-only environment
  /// keeps no uses). For `jitcache list`. Errors: io_error (LMDB's, with the folder).
  Expected<EntryUse> entry_use(const Digest& key);
  /// entry_use() of each of `keys`, in their order, with one reading of the use log (a listing
  /// of every entry). Errors as entry_use().
  Expected<std::vector<EntryUse>> entry_uses(const std::vector<Digest>& keys);
  /// Like get_record(), without copying: runs `use` on the record's bytes in place inside a
  /// read transaction, and says whether it did. `use` must not call this store.
  Expected<bool> visit_record(const Digest& name,
                              const std::function<void(std::string_view)>& use) override;
  /// Stores each record of `records` (replacing one of the same name) in one write transaction;
  /// all records go first when there would be more than k_max_records. Errors as put().
  Expected<void> put_records(const Records& records) override;
  static constexpr std::uint64_t k_max_records = 16384;
  /// Calls `fn(name, bytes)` for every record, in name order, inside one read transaction and
  /// the fault guard (bytes unverified and valid during the call only; `fn` must not call this
  /// store). For `jitcache export`. Errors as for_each().
  Expected<void> for_each_record(const std::function<void(const Digest&, std::string_view)>& fn);

  /// Tuning records: see UserTier (core/tiers/user/lmdb_tuning.cpp). `use` and `fn` run inside the
  /// fault guard, as visit_record's `use` does: they read unverified bytes of the map.
  Expected<bool> visit_tuning(const Digest& name,
                              const std::function<void(std::string_view)>& use) override;
  Expected<void> put_tuning(const Digest& name, std::string_view bytes) override;
  Expected<bool> remove_tuning(const Digest& name) override;
  Expected<void>
  for_each_tuning(const std::function<void(const Digest&, std::string_view)>& fn) override;
  /// Removes every tuning record, in one write transaction; returns how many there were.
  Expected<std::uint64_t> clear_tuning();

  /// Removes every entry, counter, record and tuning record, in a write transaction (mdb_drop):
  /// LMDB reads the whole tree. See discard() for a tier that may be damaged.
  Expected<void> clear();

  /// What discard() did.
  struct Discarded {
    bool done = false; ///< false: `reason` says why not (nothing was changed)
    std::string reason;
    bool counted = false; ///< false: the file was too damaged to count what it held
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;
  };
  /// Clears the user tier in `dir` without LMDB reading its tree, so that it works on a file
  /// however damaged: when no process, this one included, has it open (its gate held
  /// exclusively), counts the entries and their bytes (from LMDB's statistics and the stored
  /// total, guarded), then removes the data file and the lock file (the next open starts an
  /// empty one). Otherwise, or when `dir` is not this user's to write, nothing is changed and
  /// `reason` says why (clear() an open store instead). Errors: io_error when a file cannot
  /// be removed.
  static Expected<Discarded> discard(const std::filesystem::path& dir);

  /// What eviction removed.
  struct Pruned {
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;
  };
  /// Evicts least recently used entries until the stored entries take at most `max_size` bytes
  /// as entry_footprint() counts them (one write transaction; counted as "evicted" and, in
  /// value bytes, "evicted_bytes" of backend "all").
  Expected<Pruned> prune(std::uint64_t max_size);

  /// Number of entries, their stored size, and the data file's size in bytes.
  struct Usage {
    std::uint64_t entries = 0;
    std::uint64_t value_bytes = 0;
    std::uint64_t file_bytes = 0;
  };
  Expected<Usage> usage();
  /// The directory.
  std::filesystem::path dir() const;
  /// The size limit this store was opened with.
  std::optional<std::uint64_t> max_size() const;

  /// dir() / "leases", opened relative to the directory the environment was opened in.
  Expected<CacheDir> lease_dir() const override;

  /// What compact() did.
  struct Compacted {
    bool done = false; ///< false: `reason` says why not (nothing was changed)
    std::string reason;
    std::uint64_t file_bytes_before = 0;
    std::uint64_t file_bytes_after = 0;
  };
  /// Rewrites `dir`'s data file without its free pages (mdb_env_copyfd2 with MDB_CP_COMPACT into
  /// a new file, data.mdb.compact, made through CacheDir, then an atomic rename over the old
  /// one; the lock file is kept). Only done while no process, this one included, has the
  /// environment open (its gate held exclusively; processes that open it meanwhile wait for
  /// the rename), and only in a directory of this user's; otherwise nothing is changed and
  /// `reason` says why: freed pages are reused by later writes anyway. A full disk is a reason
  /// too. Errors: io_error when the copy cannot be made or written (the original is kept).
  static Expected<Compacted> compact(const std::filesystem::path& dir);

  struct Env; // internal: the shared environment (core/tiers/user/lmdb_env.hpp)

private:
  LmdbStore(std::shared_ptr<Env> env, bool read_only, Options options);
  std::shared_ptr<Env> env();
  bool writes(const Env& env) const;
  Expected<void> write_entry(const Digest& key, const Entry& entry, const Stats* counters);
  /// visit() (`hit`: recorded as a use) and peek().
  Expected<Visit> read_entry(const Digest& key, const std::function<void(const EntryView&)>& use,
                             bool hit);
  std::shared_ptr<Env> m_env;
  bool m_read_only; ///< this handle's view: a read-only open may share a writable environment
  Options m_options;
};

} // namespace jitcache::detail
