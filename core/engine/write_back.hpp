#pragma once

#include "core/engine/compile_lease.hpp"
#include "core/engine/record_buffer.hpp"
#include "core/engine/store_queue.hpp"
#include "core/engine/tier_set.hpp"
#include "core/record/request_record.hpp"
#include "core/tiers/remote/remote_lease.hpp"

#include <jitcache/config.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/key.hpp>
#include <jitcache/store.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace jitcache::detail {

class CacheCore;
class MemoryStore;

/// A compile on its way to the tiers: holds the compile lease until the entry is stored (or
/// given up), and counts the compile in the user tier's write of the entry, or else with the
/// other counters.
class Ticket {
public:
  /// `counter`: what the compile counts as (compiles, or warm_builds).
  Ticket(RecordBuffer& counters, std::string backend, std::unique_ptr<CompileLease> lease,
         std::shared_ptr<RemoteLease> remote_lease, Counter counter);
  ~Ticket();
  Ticket(const Ticket&) = delete;
  Ticket& operator=(const Ticket&) = delete;

  /// The compile's count, to be written with its entry (once).
  std::optional<Stats> take_count();
  void counted() { m_counted = true; }
  /// Waiters in other processes find the entry from now on (on other machines, once the
  /// remote writes holding remote_lease() have ended).
  void release();
  const std::shared_ptr<RemoteLease>& remote_lease() const { return m_remote_lease; }

private:
  RecordBuffer& m_counters;
  std::string m_backend;
  std::unique_ptr<CompileLease> m_lease;
  std::shared_ptr<RemoteLease> m_remote_lease;
  Counter m_counter;
  bool m_counted = false;
};

/// A cache's writes to its tiers: entries to memory and the writable persistent tiers, to the
/// remote tiers in the background (write-behind), remote hits copied into the user tier
/// (backfill), entries produced later on a background thread, their refresh at flush, and the
/// hand-over of stores to a detached process. Owned by a CacheCore, whose tier state (dead
/// tiers, a user tier made on its first write, counters) it follows. Thread-safe.
class WriteBack {
public:
  explicit WriteBack(CacheCore& core);
  /// Waits for the background tasks (StoreQueue), before anything they use goes away.
  ~WriteBack() = default;
  WriteBack(const WriteBack&) = delete;
  WriteBack& operator=(const WriteBack&) = delete;

  /// See CacheCore::store.
  void store(const Key& key, const Entry& entry);
  /// Writes `entry` (its key fields set) to memory and to the writable persistent tiers of
  /// `key.backend`, the remote ones in the background; `ticket` (may be null) gives the
  /// compile's count to the user tier's write and is released after the writes.
  void write(const Key& key, const Entry& entry, Ticket* ticket);
  /// Writes the entry `produce` makes, on a background thread; `refresh` (may be null) makes it
  /// again at each flush, stored again when it changed.
  void defer(const Key& key, std::function<Expected<Entry>()> produce,
             std::function<Expected<Entry>()> refresh, std::shared_ptr<Ticket> ticket);
  /// Has the entry of the request `record` stored by a detached process at the next flush (see
  /// Compiled::handover); `produce` and `refresh` store it here when that fails.
  void hand_over_later(const Key& key, RequestRecord record,
                       std::function<Expected<Entry>()> produce,
                       std::function<Expected<Entry>()> refresh);
  /// Copies a remote hit into the user tier, in the background.
  void backfill(const Key& key, Entry entry);
  /// Runs `task` in the background, with the deferred stores.
  void push(std::function<void()> task);
  /// Hands the pending requests over, waits for the background tasks, then refreshes.
  void flush();
  /// After flush(): waits up to `limit` for the stores handed over to detached processes (see
  /// Cache::wait_for_stores).
  Expected<void> wait_for_handed_over(std::chrono::milliseconds limit);
  /// Drops the producers of refresh(): they hold runtime objects, to be released before the
  /// handles.
  void forget_refreshes();

private:
  /// Starts the detached process for the requests handed over since the last flush.
  void hand_over_pending();
  /// Sends `entry` to each remote tier that is up and writable, in the background; `lease` is
  /// let go once every send has ended.
  void write_remote(const Key& key, const Entry& entry, std::shared_ptr<RemoteLease> lease);
  void refresh();

  // The core's state and tier bookkeeping that the writes follow.
  bool persistent(const std::string& backend) const;
  bool up(const Tier& tier) const;
  void mark_dead(Tier& tier, const Error& error);
  bool user_usable(const std::string& backend) const;
  bool make_user_tier();
  void count(const std::string& backend, Counter counter, std::uint64_t amount = 1);

  CacheCore& m_core;
  const Config& m_config;
  const std::shared_ptr<MemoryStore>& m_memory;
  const TierSet& m_tiers;

  /// Entries whose producer runs again at flush; `stored` is the payload hash last written.
  struct Refresh {
    Key key;
    std::function<Expected<Entry>()> produce;
    std::uint64_t stored = 0;
  };
  std::mutex m_refresh_mutex;
  std::vector<std::shared_ptr<Refresh>> m_refresh;
  /// Requests whose entries a detached process is to store, with what stores them here instead.
  struct Handover {
    Key key;
    RequestRecord record;
    std::function<Expected<Entry>()> produce;
    std::function<Expected<Entry>()> refresh;
  };
  std::mutex m_handover_mutex;
  std::vector<Handover> m_handovers;
  StoreQueue m_queue; ///< last: its destructor waits for tasks that use the members above
};

} // namespace jitcache::detail
