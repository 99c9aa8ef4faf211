#pragma once

#include "core/handle_cache.hpp"
#include "core/lmdb_store.hpp"
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
  /// Writes to memory and to the writable persistent tiers of `key.backend`.
  void store(const Key& key, const Entry& entry);
  void store_later(const Key& key, std::function<Expected<Entry>()> produce,
                   std::function<Expected<Entry>()> refresh);
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
  void worker();
  void flush_counters();
  void refresh();

  const Config m_config;
  std::shared_ptr<MemoryStore> m_memory;
  std::vector<std::unique_ptr<Tier>> m_persistent; ///< lookup order
  std::shared_ptr<LmdbStore> m_user;               ///< also in m_persistent; holds counters
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
  std::thread m_worker;

  /// Entries whose producer runs again at flush; `stored` is the payload hash last written.
  struct Refresh {
    Key key;
    std::function<Expected<Entry>()> produce;
    std::uint64_t stored = 0;
  };
  std::vector<std::shared_ptr<Refresh>> m_refresh; ///< guarded by m_queue_mutex
};

} // namespace jitcache::detail
