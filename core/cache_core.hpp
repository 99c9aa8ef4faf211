#pragma once

#include "core/compile_lease.hpp"
#include "core/handle_cache.hpp"
#include "core/lmdb_store.hpp"
#include "core/manifest.hpp"
#include "core/memory_store.hpp"
#include "core/single_flight.hpp"

#include <jitcache/cache.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace jitcache::detail {

/// The state behind a Cache: the tiers, counters, deferred stores and the memory tier of
/// loaded handles. Backends reach it through Cache::core().
class CacheCore {
public:
  CacheCore(Config config, std::optional<std::vector<std::shared_ptr<Store>>> stores);
  ~CacheCore();

  const Config& config() const { return m_config; }
  HandleCache& handles() { return m_handles; }

  /// Reads through memory, then the persistent tiers of `backend` (if enabled). A persistent
  /// hit is copied into the memory tier. A failing tier is marked dead and skipped from then on.
  std::optional<Found> lookup(const Key& key);
  /// Runs `use` on the entry the user tier holds for `key`, in place (no copy: a heavy binary
  /// is loaded straight from the map), and returns the tier's name; nullopt when it holds none
  /// for this request (or is off, or fails: then marked dead). Nothing is counted but damage;
  /// the caller counts the hit. `use` must not call the Cache.
  std::optional<std::string> use_stored(const Key& key,
                                        const std::function<void(const EntryView&)>& use);

  /// The record remembered under `name` (see core/manifest.hpp) when the user tier holds it for
  /// `backend`'s persistent tiers, it is intact, and every file stamp it was remembered with is
  /// unchanged (one stat each). nullopt otherwise, also when the tier fails (never an error:
  /// the caller computes what was remembered instead).
  std::optional<Record> recall(const std::string& backend, const Digest& name);
  /// Like recall(), without checking the stamps (the caller does: PendingKey) or copying: runs
  /// `use` on the intact record in place, and says whether it did. `use` must not call the
  /// Cache.
  bool peek(const std::string& backend, const Digest& name,
            const std::function<void(const RecordView&)>& use);
  /// Remembers `record` under `name` in the user tier, when `backend`'s persistent tiers are on
  /// and it is writable. Best effort: a failed write is logged at info level and forgotten.
  void remember(const std::string& backend, const Digest& name, const Record& record);

  /// What claim() found: the entry, or the right to compile it.
  struct Claim {
    std::optional<Found> found;          ///< a tier has it (perhaps after waiting for it)
    std::unique_ptr<CompileLease> lease; ///< else: held while compiling and storing; null when
                                         ///< no lease applies (no writable user tier)
  };
  /// Looks `key` up; on a miss, takes the cross-process compile lease for it (CompileLease),
  /// waiting while another process compiles the same key and answering from the tiers once it
  /// has stored the entry. Misses on other keys never wait here. A lease that cannot be taken
  /// is warned about once, and the caller compiles without one.
  Claim claim(const Key& key);

  /// A successful compile on its way to the tiers (see compiled()). Destroying it lets go of
  /// the lease; a compile that was not stored in the user tier with its count is then counted
  /// with the other counters.
  class Compiled {
  public:
    ~Compiled();
    Compiled(const Compiled&) = delete;
    Compiled& operator=(const Compiled&) = delete;

  private:
    friend class CacheCore;
    Compiled(CacheCore& core, std::string backend, std::unique_ptr<CompileLease> lease);
    CacheCore& m_core;
    std::string m_backend;
    std::unique_ptr<CompileLease> m_lease;
    bool m_counted = false; ///< persisted with the entry
  };
  /// Counts a successful compile of `key` in this session and returns what store() and
  /// store_later() take to persist the count with the entry and then let go of `lease`.
  std::shared_ptr<Compiled> compiled(const Key& key, std::unique_ptr<CompileLease> lease);

  /// Writes to memory and to the writable persistent tiers of `key.backend`. With `compiled`,
  /// the user tier gets the entry and the compile's count in one write (so that a process
  /// killed before storing counts nothing), and the lease is let go of afterwards.
  void store(const Key& key, const Entry& entry, Compiled* compiled = nullptr);
  /// Like store(), with the entry produced on a background thread (see Cache::store_later);
  /// `compiled` is held until that store has happened or failed.
  void store_later(const Key& key, std::function<Expected<Entry>()> produce,
                   std::function<Expected<Entry>()> refresh,
                   std::shared_ptr<Compiled> compiled = nullptr);
  /// Counts a hit on `key` served by `tier`, which saved `compile_ns`, and says so in `info`
  /// (outcome, tier, `bytes`).
  void count_hit(const Key& key, const std::string& tier, std::uint64_t compile_ns,
                 std::uint64_t bytes, BuildInfo& info);
  void evict(const Key& key);
  void flush();
  void count(const std::string& backend, const std::string& name, std::uint64_t amount);
  Stats session_stats() const;
  std::vector<std::shared_ptr<Store>> tiers() const;
  bool persistent(const std::string& backend) const;

  /// In-process single flight for get_or_compile.
  SingleFlight<Digest, Expected<Found>>& compiles() { return m_compiles; }

private:
  struct Tier {
    std::shared_ptr<Store> store;
    std::atomic<bool> dead{false};
  };
  void mark_dead(Tier& tier, const Error& error);
  /// Counts damage the user tier found since it had seen `corrupt_before` (corrupt_seen()).
  void count_corrupt_since(const std::string& backend, std::uint64_t corrupt_before);
  /// An entry `tier` holds for `key` was stored with other fields: counted, warned about and
  /// removed.
  void refuse_other_request(Tier& tier, const Key& key);
  bool leases_apply(const std::string& backend) const;
  void count_unsaved(const std::string& backend, const std::string& name, std::uint64_t amount);
  void worker();
  void flush_counters();
  void refresh();

  const Config m_config;
  std::shared_ptr<MemoryStore> m_memory;
  std::vector<std::unique_ptr<Tier>> m_persistent; ///< lookup order
  std::shared_ptr<LmdbStore> m_user;               ///< also in m_persistent; holds counters
  Tier* m_user_tier = nullptr;                     ///< m_user's entry in m_persistent
  HandleCache m_handles;
  SingleFlight<Digest, Expected<Found>> m_compiles;

  mutable std::mutex m_stats_mutex;
  Stats m_session;  ///< since creation
  Stats m_unsaved;  ///< not yet written to the user tier

  std::mutex m_queue_mutex;
  std::condition_variable m_queue_cv;
  std::condition_variable m_idle_cv;
  std::deque<std::function<void()>> m_queue;
  std::size_t m_running = 0;
  bool m_stopping = false;
  std::vector<std::thread> m_workers; ///< up to k_store_workers: a slow store never holds up
                                      ///< another key's (whose lease other processes wait on)

  /// Entries whose producer runs again at flush; `stored` is the payload hash last written.
  struct Refresh {
    Key key;
    std::function<Expected<Entry>()> produce;
    std::uint64_t stored = 0;
  };
  std::vector<std::shared_ptr<Refresh>> m_refresh; ///< guarded by m_queue_mutex
};

} // namespace jitcache::detail
