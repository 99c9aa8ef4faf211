#pragma once

#include "core/engine/compile_lease.hpp"
#include "core/engine/compiled.hpp"
#include "core/engine/handle_cache.hpp"
#include "core/engine/record_buffer.hpp"
#include "core/engine/single_flight.hpp"
#include "core/engine/tier_set.hpp"
#include "core/engine/write_back.hpp"
#include "core/key/manifest.hpp"
#include "core/record/request_record.hpp"
#include "core/tiers/memory_store.hpp"
#include "core/tiers/packages/package_target.hpp"
#include "core/tiers/remote/remote_lease.hpp"
#include "core/tiers/remote/remote_store.hpp"
#include "core/tiers/user/user_tier.hpp"

#include <jitcache/cache.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace jitcache::detail {

/// Receives an entry (stored, or just compiled) in place and puts it to use (loads it into the
/// runtime, copies it out). An error refuses it: with code load_failed or corrupt the stored
/// binary is bad (rejected, evicted where the tier is writable, rebuilt); any other error (no
/// context, say) is the request's and returned as is.
using EntryReceiver = std::function<Expected<void>(const EntryView&)>;

/// A hit, before it is counted (see CacheCore::serve).
struct Served {
  std::string tier;
  std::uint64_t compile_ns = 0; ///< what the hit saved
  std::uint64_t bytes = 0;
};

/// The state behind a Cache: the tiers, the one path that gets a usable entry (obtain), the
/// memory tier of loaded handles; the writes (WriteBack) and the counters and records held for
/// the user tier (RecordBuffer) are its parts. Backends reach it with core_of(Cache&).
///
/// The tier walk: memory (an LRU of entries), then the persistent tiers of the request's
/// backend (when its persistence is on) in lookup order, the user tier among them, the remote
/// tiers (RemoteStore) after it. A tier whose
/// entry answers another request is counted corrupt and skipped; one that fails is marked dead
/// for the rest of the process (one warning), a remote one for its back-off period (counted
/// remote_down each time, one warning); one whose entry the receiver refuses has it
/// counted `rejected` and evicted (where writable), and the walk goes on past it. After the
/// walk, a miss compiles: once per key in the process (single flight), with a writable user
/// tier once across processes (CompileLease), and with a writable remote tier once across the
/// machines sharing it (RemoteLease, held until the entry is on the remote).
///
/// A remote hit is copied into the user tier in the background (backfill); entries are written
/// to the remote tiers in the background too (WriteBack), never on the caller's path.
class CacheCore {
public:
  /// `tiers` are the persistent tiers in lookup order, with their roles (nullopt: those of
  /// `config`, TierSet::of_config). With config.read_only, each is made read-only
  /// (TierSet::make_read_only).
  CacheCore(Config config, std::optional<TierSet> tiers);
  ~CacheCore();

  const Config& config() const { return m_config; }
  /// The clock that decides whether a file's stamp is too recent to vouch for its content
  /// (guards_of); the real one unless a test set another. Thread-safe.
  StampClock stamp_clock() const { return m_stamp_clock.load(); }
  /// For tests: a clock they set instead of sleeping until the stamps of files they just wrote
  /// can vouch. Applies to keys built from then on.
  void set_stamp_clock(StampClock clock) { m_stamp_clock.store(clock); }
  HandleCache& handles() { return m_handles; }
  bool persistent(const std::string& backend) const;

  /// Whether the tier walk copies a persistent hit into the memory tier of entries: yes for
  /// callers that are handed entries (Cache::get_or_compile, lookup); no for the request
  /// pipeline, whose answer is held by what it loaded or by the front-end's program (a copy of
  /// a heavy binary costs more than the rest of a hit).
  enum class Memory { keep, skip };

  /// The tiers whose entry for a request was refused (rejected) during that request: not asked
  /// again for it, so one bad binary is counted and warned about once. Opaque to callers, who
  /// only carry it from serve() to obtain().
  struct Refusals {
    std::vector<const void*> tiers;
    /// Remote tiers whose value for the request was damaged or not signed right: counted once
    /// per request, but asked again (a waiter polling for another machine's compile sees the
    /// holder's entry replace the bad value).
    std::vector<const void*> bad_remote_values;
  };

  /// The one path for "get a usable entry": walks the tiers handing each entry for `key` to
  /// `use` until one is accepted; on a miss compiles (see the class comment), stores the entry
  /// (or has it produced later) and hands it to `use`. Counts, and reports in `info` (key,
  /// outcome, tier, compile_ms, bytes, note): a hit per tier; a miss with its compile (the
  /// compile's count written with the entry); rejected and corrupt entries; compile errors.
  /// A request that waited for another thread's compile of the same key is a memory hit.
  /// Errors: the compile's (compile_failed carries the log), a fresh entry's refusal, and
  /// `use`'s errors that are not refusals.
  /// `refusals`: what serve() refused earlier in the same request (its entries are not handed
  /// to `use` again).
  Expected<void> obtain(const Key& key, const Compiler& compile, const EntryReceiver& use,
                        BuildInfo& info, Memory memory = Memory::keep, Refusals refusals = {});

  /// The first half of a speculative hit: walks the tiers for `key` (a key not yet proven)
  /// without counting a hit or compiling; nullopt when no tier has an entry `use` accepts.
  /// Refusals and damage are handled and counted as in obtain(), and the refusing tiers added
  /// to `refusals` (pass them to obtain() for the same key). Count the hit with count_hit()
  /// once the key is proven.
  Expected<std::optional<Served>> serve(const Key& key, const EntryReceiver& use, BuildInfo& info,
                                        Refusals& refusals, Memory memory = Memory::skip);
  /// Counts `served` as a hit on `key` and reports it in `info`.
  void count_hit(const Key& key, const Served& served, BuildInfo& info);
  /// A request answered by the memory tier of loaded handles: counted, and reported as
  /// `first` (how the handle was first obtained) says, as a memory hit.
  BuildInfo memory_hit(const std::string& backend, const BuildInfo& first);

  /// Whether any package tier is there: without one, no request needs its package target
  /// (building it costs a fresh process's hit about 5%).
  bool has_packages() const { return !m_tiers.packages().empty(); }

  /// The compiler identities the package tiers' entries for `target` were made with (each a
  /// toolchain section of key fields, decode_key_fields), each once in lookup order; none when
  /// `target.backend`'s persistent tiers are off. A backend builds its key with these first, so
  /// a packaged kernel is found without opening the compiler (or on a machine without it).
  std::vector<std::vector<KeyField>> packaged_toolchains(const PackageTarget& target) const;

  /// The bytes of the record named `name` (PackageRecord) that the package tiers hold for
  /// `backend`, asked in lookup order (the embedded tier, then the system tier: as entries are),
  /// the first found winning; nullopt when none holds it, when `backend`'s persistent tiers are
  /// off, or when a package's record cannot be read (one warning per package, see
  /// PackageStore::record). Opaque bytes: the caller verifies them. Cheap when no package serves
  /// `backend`. Thread-safe.
  std::optional<std::string> packaged_record(const std::string& backend, const Digest& name) const;

  /// Reads `key` through the tiers without compiling or counting. nullopt on a miss.
  std::optional<Found> lookup(const Key& key);

  /// The record remembered under `name` (see core/key/manifest.hpp) when the user tier holds it for
  /// `backend`'s persistent tiers, it is intact, and every file stamp it was remembered with is
  /// unchanged (one stat each). nullopt otherwise, also when the tier fails (then marked dead;
  /// never an error: the caller computes what was remembered instead).
  std::optional<Record> recall(const std::string& backend, const Digest& name);
  /// Like recall(), without checking the stamps (the caller does: PendingKey) or copying: runs
  /// `use` on the intact record in place (one this process remembered and has not written yet
  /// comes first, a copy of it), and says whether it did. A record that names parts is given
  /// whole, in place with the bytes this process knows of its parts (KnownParts; those it does
  /// not know yet are read the same way, then the record again), and not at all when a part is
  /// missing or damaged. `use` must not call the Cache.
  bool peek(const std::string& backend, const Digest& name,
            const std::function<void(const RecordView&)>& use);
  /// Remembered records held unwritten are written in the background once they reach this
  /// size.
  static constexpr std::size_t k_unsaved_record_bytes = RecordBuffer::k_unsaved_record_bytes;
  /// Remembers `record` under `name` in the user tier, when `backend`'s persistent tiers are on
  /// and it is writable: written by flush(), with the others in one write (or in the
  /// background, all held so far in one write, once they reach k_unsaved_record_bytes). Best
  /// effort: a failed write is warned about (once per error) and forgotten.
  void remember(const std::string& backend, const Digest& name, const Record& record);
  /// Whether `part` (a part of manifests: see Record) is new to this Cache, which takes note: the
  /// caller then remembers it with the record that names it, and the next manifest that names
  /// it does not (parts are shared by every manifest built from the same files). A part that was
  /// not written after all (a full disk, records dropped by eviction) leaves the manifests that
  /// name it unusable, never wrong: peek() finds no record, and the key is built from the files.
  /// Bounded: past k_claimed_parts, every part is new again. Thread-safe.
  bool claim_part(const Digest& part);
  static constexpr std::size_t k_claimed_parts = 4096;
  /// Records (name, record) that another thread is making, remembered as remember() does once
  /// `made` is ready: this machine's manifest of a key that a package's portable manifest proved,
  /// made after the request was answered (PendingKey). `name` is the one the request peeks
  /// under. Waited for by flush() (all) and by peek() of `name`; peek() of another name takes
  /// those that are ready, waiting for none. A wait ends after k_made_wait (the record is then
  /// dropped: the next process proves again), and none is waited for in a fork()ed child, where
  /// the thread making it does not run. Thread-safe.
  using Made = std::vector<std::pair<Digest, Record>>;
  void remember_made(const std::string& backend, const Digest& name, std::shared_future<Made> made);
  static constexpr std::chrono::seconds k_made_wait{10};

  /// Writes `entry` to memory and to the writable persistent tiers of `key.backend`. Failures
  /// are logged (once per tier and error) and counted.
  void store(const Key& key, const Entry& entry);
  /// Like store(), with the entry produced on a background thread (see Cache::store_later).
  void store_later(const Key& key, std::function<Expected<Entry>()> produce,
                   std::function<Expected<Entry>()> refresh);
  /// An entry for `key` another process handed over (a cohort's): kept in the memory tier, and
  /// with `write` also written to the writable persistent tiers (as store()).
  void adopt(const Key& key, const Entry& entry, bool write);
  /// Removes `key` from every writable tier.
  void evict(const Key& key);
  /// Hands the requests whose entries are to be stored by a detached process over to one (see
  /// Compiled::handover; on failure, one warning, and they are stored here instead), waits for
  /// deferred stores, refreshes, and writes the remembered records and the counters to the user
  /// tier.
  void flush();
  /// See Cache::wait_for_stores.
  Expected<void> wait_for_stores(std::chrono::milliseconds limit);
  Stats session_stats() const;
  std::vector<std::shared_ptr<Store>> tiers() const;
  /// The tiers with their roles (memory first).
  const TierSet& tier_set() const { return m_tiers; }

  /// The user tier, when `backend`'s persistent tiers are on and it has not failed; null
  /// otherwise. For what the core keeps there besides entries (the tuning database).
  std::shared_ptr<UserTier> usable_user_tier(const std::string& backend) const;
  /// Whether this process writes to the user tier (writable, and not JITCACHE_READONLY).
  bool user_tier_writes() const;
  /// A failure of the user tier met outside the tier walk: it is skipped for the rest of the
  /// process (one warning, counted in dead_tiers).
  void user_tier_failed(const Error& error);
  /// Counts `amount` of `counter` for `backend` (session and user tier).
  void count(const std::string& backend, Counter counter, std::uint64_t amount = 1);
  /// Counts a hit of `backend` from `tier`.
  void count_hits(const std::string& backend, const std::string& tier);

private:
  /// The writes follow the tier state kept here (dead tiers, the deferred user tier).
  friend class WriteBack;

  struct Flight {
    std::shared_ptr<const Entry> entry; ///< the leader's compile; null: look again
  };
  struct Claim {
    std::optional<Served> served;        ///< a tier has it (perhaps after waiting for it)
    std::unique_ptr<CompileLease> lease; ///< else: held while compiling; null when none applies
    std::shared_ptr<RemoteLease> remote_lease; ///< likewise, across machines
    std::optional<CacheDir> lease_dir;         ///< where `lease` is, when one applies
    /// Another process compiled the key here and handed its store over (not stored yet): the
    /// compile that follows runs over the runtime's warm cache (CompileLease::handed_over).
    bool handed_over = false;
  };

  Expected<std::optional<Served>> walk(const Key& key, const EntryReceiver& use, BuildInfo& info,
                                       Refusals& refused, Memory memory);
  /// Walks again, then takes the cross-process compile lease for `key`, waiting while another
  /// process compiles it and serving from the tiers once it has stored the entry.
  Expected<Claim> claim(const Key& key, const EntryReceiver& use, BuildInfo& info,
                        Refusals& refused, Memory memory);
  /// The miss path of obtain() for the thread that leads the key's single flight.
  Expected<Flight> compile_and_store(const Key& key, const Compiler& compile,
                                     const EntryReceiver& use, BuildInfo& info, Refusals& refused,
                                     Memory memory);
  /// Whether `tier` is to be asked now (not dead, not backing off).
  static bool up(const Tier& tier);
  /// Takes the fleet's compile lease for `key` on the first remote tier that can hold one (see
  /// claim()).
  Expected<void> claim_remote(const Key& key, const std::function<bool()>& ready, Claim& claim,
                              std::optional<Error>& failed);
  void reject(Tier& tier, const Key& key, const Error& why, BuildInfo& info);
  void mark_dead(Tier& tier, const Error& error);
  /// An entry `tier` holds for `key` was stored with other fields: counted, warned about and
  /// removed.
  void refuse_other_request(Tier& tier, const Key& key);
  bool user_usable(const std::string& backend) const;
  /// Makes the user tier now when its making was deferred (DeferredUserTier), before a miss or
  /// a write needs it. False when there is no usable user tier; when it cannot be made, it is
  /// skipped for the rest of the process with the one warning of a Cache that cannot open it.
  bool make_user_tier();
  bool leases_apply(const std::string& backend) const;
  /// remember() what remember_made() was given: every record when `name` is null, otherwise
  /// those already made and those for `*name`.
  void remember_what_was_made(const Digest* name);

  struct Making {
    std::string backend;
    Digest name;
    std::shared_future<Made> made;
    unsigned generation; ///< fork_generation() when it was given
  };

  const Config m_config;
  std::atomic<StampClock> m_stamp_clock{&real_time_ns};
  std::shared_ptr<MemoryStore> m_memory;
  TierSet m_tiers; ///< lookup order, memory first
  HandleCache m_handles;
  SingleFlight<Digest, Expected<Flight>> m_compiles;

  RecordBuffer m_records; ///< the counters and remembered records, until flush writes them
  std::mutex m_parts_mutex;
  std::unordered_set<Digest> m_claimed_parts; ///< claim_part()'s
  std::mutex m_making_mutex;
  std::vector<Making> m_making; ///< remember_made()'s, not remembered yet
  /// Last: its destructor waits for background tasks that use the members above.
  WriteBack m_write_back;
};

/// The state behind `cache`, for the backends.
CacheCore& core_of(Cache& cache);

} // namespace jitcache::detail
