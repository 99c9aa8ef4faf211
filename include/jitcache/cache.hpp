#pragma once

#include <jitcache/config.hpp>
#include <jitcache/entry.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/export.hpp>
#include <jitcache/key.hpp>
#include <jitcache/stats.hpp>
#include <jitcache/store.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace jitcache {

class Cache;
namespace detail {
class CacheCore;
class TierSet;
CacheCore& core_of(Cache& cache);
} // namespace detail

/// Whether a request was answered from a tier or had to be compiled.
enum class Outcome { hit, miss };

/// Returns "hit" or "miss".
JITCACHE_EXPORT const char* to_string(Outcome outcome) noexcept;

/// How a build request was served; every backend's result carries one.
struct BuildInfo {
  Digest key;
  Outcome outcome = Outcome::miss;
  std::string device;      ///< the device or target it was built for (name or arch)
  std::string tier;        ///< tier that answered ("memory", "user", ...) or "compile"
  double compile_ms = 0;   ///< time in the runtime compiler (0 on a hit)
  double load_ms = 0;      ///< time loading/building the binary into the runtime
  double total_ms = 0;     ///< wall time of the whole call
  std::uint64_t bytes = 0; ///< size of the binary
  std::string note;        ///< anything the caller should know (e.g. "stored binary rejected")
};

/// An entry found by a lookup, and the tier it came from.
struct Found {
  Entry entry;
  std::string tier;
};

/// The cache: the tiers of DESIGN.md behind one object. Thread-safe: any number of threads may
/// share one Cache. Create one per process per configuration; it is neither copyable nor
/// movable. The destructor waits for deferred stores (see store_later) to finish.
class JITCACHE_EXPORT Cache {
public:
  /// A cache configured from the environment (Config::from_environment()).
  Cache();
  /// A cache with an explicit configuration.
  explicit Cache(Config config);
  /// A cache whose persistent tiers are exactly `stores`, in lookup order (the memory tier is
  /// always first). For embedders that bring their own Store: each is a plain tier (read, written
  /// and evicted; none holds the counters, records or compile leases of the user tier). With
  /// JITCACHE_READONLY each is read-only (never written or evicted).
  Cache(Config config, std::vector<std::shared_ptr<Store>> stores);
  /// Internal (tests): a cache whose persistent tiers are `tiers`, each with the role the caller
  /// gave it (user tier, packages, remote; see core/engine/tier_set.hpp).
  Cache(Config config, detail::TierSet tiers);
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  /// The configuration in force.
  const Config& config() const;

  /// Backend-neutral lookup-or-compile. Looks `key` up through the tiers; on a miss calls
  /// `compile` once (concurrent callers with the same key wait for that one call and share
  /// its result), stores the entry in the writable tiers, and returns it. A compile error is
  /// returned as is and nothing is stored. A store failure is logged and counted, and the
  /// compiled entry is still returned.
  ///
  /// Across processes sharing a writable user tier, one process compiles a missing key while
  /// the others wait and then read the stored entry; if the compiling process dies, a waiter
  /// takes over at once; if it runs past its lease (2 minutes), one waiter compiles as well.
  /// Misses on different keys never wait for each other. No LMDB write transaction is held
  /// while `compile` runs. The compile is counted ("compiles") in the same write as the entry.
  Expected<Found> get_or_compile(const Key& key, const std::function<Expected<Entry>()>& compile,
                                 BuildInfo* info = nullptr);

  /// Reads `key` through the tiers without compiling. nullopt on a miss; tier failures are
  /// logged, the tier marked dead, and the lookup goes on. Counts nothing.
  std::optional<Found> lookup(const Key& key);

  /// Writes `entry` to every writable tier now (memory included). Failures are logged and
  /// counted, never returned: a cache that cannot write still works.
  void store(const Key& key, const Entry& entry);

  /// Like store(), but `produce` runs on a background thread. Used when getting the binary is
  /// slow and the caller already has a usable result. Pending stores finish in flush() or the
  /// destructor; if the process exits without either, they are simply lost (the next process
  /// misses and compiles again; nothing is left half-written).
  ///
  /// When `refresh` is given, flush() (and so the destructor) calls it and stores its entry again
  /// if the payload differs from the one stored: for runtimes whose binaries grow as a program
  /// is used (PoCL adds the kernels it specialised for each launch's work-group size).
  void store_later(const Key& key, std::function<Expected<Entry>()> produce,
                   std::function<Expected<Entry>()> refresh = {});

  /// Waits until every deferred store has finished, and writes counters to the user tier.
  /// With Config::opencl_store == StoreMode::detach, the PoCL programs built from source since
  /// the last flush are first handed to a detached `jitcache store` process (not waited for:
  /// until it has stored them, a new process misses them; if it is killed, they are simply not
  /// stored). Should it not start (no `jitcache` executable, it could not be started, no user
  /// tier), they are stored in this process and waited for, with one warning. The destructor
  /// flushes.
  void flush();

  /// Waits until every store handed over to this cache's store worker is done (StoreMode::detach;
  /// by this process or any other), for at most `limit` (zero: no limit): flushes first, so that
  /// this process's own are handed over, then runs `jitcache store --wait` on the user tier's
  /// pending folder, which waits for the one store worker of the cache and makes the stores
  /// left itself when none is alive. Afterwards a new process hits every program handed over
  /// (unless its files changed). For a process that must not end before its stores are kept,
  /// and for CI before it saves the cache. Returns at once when nothing was ever handed over,
  /// there is no cache directory, or JITCACHE_READONLY is set (nothing can be stored). Errors:
  /// runtime_error (not done within `limit`, a request file could not be read, the process
  /// could not be started, or this process ignores SIGCHLD), runtime_missing (stores are
  /// pending and no `jitcache` executable is found). Thread-safe as flush() is.
  Expected<void> wait_for_stores(std::chrono::milliseconds limit = std::chrono::milliseconds(0));

  /// Removes `key` from every writable tier (a binary the runtime rejected).
  void evict(const Key& key);

  /// Counters of this process since the Cache was created.
  Stats session_stats() const;

  /// The tiers in lookup order (memory first), for tools like `jitcache list`.
  std::vector<std::shared_ptr<Store>> tiers() const;

  /// Whether `backend` uses persistent tiers in this cache.
  bool persistent(const std::string& backend) const;

private:
  friend detail::CacheCore& detail::core_of(Cache& cache);
  std::unique_ptr<detail::CacheCore> m_core;
};

} // namespace jitcache
