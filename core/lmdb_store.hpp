#pragma once

#include <jitcache/stats.hpp>
#include <jitcache/store.hpp>

#include <filesystem>
#include <memory>

namespace jitcache {

/// The user tier: an LMDB environment in a directory (node-local; never on a network FS).
///
/// LMDB's rules kept here: one environment per directory per process (shared between
/// LmdbStore objects through a registry); short write transactions only (compiles happen
/// outside); values copied out of the read transaction before it ends; the map grows on
/// MDB_MAP_FULL and adopts a size grown by another process (MDB_MAP_RESIZED); a child after
/// fork() opens its own environment and never touches the parent's. Entries are verified on
/// every read; an entry that fails verification is logged, counted and reported as a miss.
class LmdbStore final : public Store {
public:
  /// Opens (creating the directory, parents too, mode 0700, unless `read_only`) the environment
  /// in `dir`. A directory that cannot be written is opened read-only, with a warning.
  /// Errors: io_error naming the path and the reason (not a directory, no permission, ...).
  static Expected<std::shared_ptr<LmdbStore>> open(const std::filesystem::path& dir,
                                                  bool read_only);
  ~LmdbStore() override;

  std::string name() const override { return "user"; }
  bool writable() const override;
  Expected<std::optional<Entry>> get(const Digest& key) override;
  Expected<void> put(const Digest& key, const Entry& entry) override;
  Expected<bool> remove(const Digest& key) override;
  Expected<void> for_each(const std::function<void(const Item&)>& fn) override;

  /// Adds `delta` to the counters kept in the environment (one write transaction).
  Expected<void> add_counters(const Stats& delta);
  /// Reads the counters kept in the environment.
  Expected<Stats> counters();
  /// Removes every entry and counter.
  Expected<void> clear();
  /// Number of entries and the size of the data file in bytes.
  struct Usage {
    std::uint64_t entries = 0;
    std::uint64_t value_bytes = 0;
    std::uint64_t file_bytes = 0;
  };
  Expected<Usage> usage();
  /// The directory.
  const std::filesystem::path& dir() const;

  /// Corrupt entries seen by get() since this process started (for tests and stats).
  std::uint64_t corrupt_seen() const;

  struct Env; // internal: the shared environment

private:
  explicit LmdbStore(std::shared_ptr<Env> env);
  std::shared_ptr<Env> env();
  std::shared_ptr<Env> m_env;
};

} // namespace jitcache
