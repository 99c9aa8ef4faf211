#include "core/engine/cache_core.hpp"

#include "core/engine/compile_slot.hpp"
#include "core/engine/proven_stamps.hpp"

#include "core/tiers/user/deferred_user_tier.hpp"

#include "core/config/config_table.hpp"
#include "core/key/key_fields.hpp"
#include "core/key/known_parts.hpp"
#include "core/support/clock.hpp"
#include "core/support/fork_guard.hpp"
#include "core/support/log.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/packages/package_store.hpp"
#include "core/tiers/user/user_store.hpp"

#include <algorithm>

namespace jitcache::detail {

namespace {

// Whether an error from an entry's receiver says the entry itself is bad.
bool refusal(const Error& error) {
  return error.code == ErrorCode::load_failed || error.code == ErrorCode::corrupt;
}

std::int64_t steady_ns() {
  return clock().steady_ns();
}

} // namespace

CacheCore::CacheCore(Config config, std::optional<TierSet> tiers)
    : m_config(std::move(config)), m_memory(std::make_shared<MemoryStore>(m_config.memory_bytes)),
      m_tiers(tiers ? std::move(*tiers) : TierSet::of_config(m_config)),
      m_records(m_tiers, [this] { return make_user_tier(); }), m_write_back(*this) {
  log::set_level(m_config.log_level);
  if (m_config.read_only)
    m_tiers.make_read_only();
  m_tiers.add_memory_first(m_memory);
}

CacheCore::~CacheCore() {
  flush();
  m_write_back.forget_refreshes(); // the producers hold runtime objects: before the handles
  m_handles.clear();
}

bool CacheCore::persistent(const std::string& backend) const {
  return detail::persistence_noticed(m_config, backend);
}

bool CacheCore::up(const Tier& tier) {
  return !tier.dead && (!tier.remote || tier.down_until_ns.load() <= steady_ns());
}

void CacheCore::mark_dead(Tier& tier, const Error& error) {
  if (tier.remote) {
    // A remote comes back (a restart, a network blip): left alone for its back-off, then tried
    // again, so a dead remote costs at most one timeout per back-off period.
    const std::int64_t now = steady_ns();
    std::int64_t until = tier.down_until_ns.load();
    const std::int64_t back_off =
        std::chrono::duration_cast<std::chrono::nanoseconds>(tier.remote->url().back_off).count();
    if (until > now || !tier.down_until_ns.compare_exchange_strong(until, now + back_off))
      return; // another thread marked it first
    count("all", Counter::remote_down);
    const std::string seconds = std::to_string(tier.remote->url().back_off.count() / 1000.0);
    log::write_once(LogLevel::warn, "remote-down:" + tier.remote->url().display(),
                    "remote tier " + tier.remote->url().display() + " failed (" + error.message +
                        "); skipping it for " + seconds.substr(0, seconds.find('.') + 2) +
                        " s at a time while it fails");
    log::debug("remote tier " + tier.remote->url().display() + " failed: " + error.message);
    return;
  }
  if (!tier.dead.exchange(true)) {
    count("all", Counter::dead_tiers);
    log::warn("tier '" + tier.store->name() + "' failed (" + error.message +
              "); skipping it for the rest of this process");
  }
}

Expected<std::optional<Served>> CacheCore::walk(const Key& key, const EntryReceiver& use,
                                                BuildInfo& info, Refusals& refused, Memory memory) {
  const bool persistent_on = persistent(key.backend);
  for (auto& tier : m_tiers.all()) {
    if (!up(*tier) || (tier->persistent && !persistent_on) ||
        std::find(refused.tiers.begin(), refused.tiers.end(), tier.get()) != refused.tiers.end())
      continue;
    if (tier->packages)
      tier->packages->check_target(key);
    bool other_request = false;
    Expected<void> used;
    Served served{tier->store->name(), 0, 0};
    std::optional<Entry> copy;
    auto seen = tier->store->visit(key.digest, [&](const EntryView& entry) {
      if ((other_request = entry.key_fields != key.stored_fields))
        return;
      served.compile_ns = entry.compile_ns;
      served.bytes = entry.payload.size();
      used = use(entry);
      if (used && tier->persistent && (memory == Memory::keep || tier->remote))
        copy = to_entry(entry);
    });
    if (!seen) {
      mark_dead(*tier, seen.error());
      continue;
    }
    using Outcome = Store::Visit::Outcome;
    if (tier->remote && !*seen && seen->outcome != Outcome::miss) {
      // Counted once per request: the value stays on the server until the holder of the
      // fleet's lease stores over it, and the walk runs again while this process waits.
      auto& bad = refused.bad_remote_values;
      if (std::find(bad.begin(), bad.end(), tier.get()) == bad.end()) {
        count(key.backend,
              seen->outcome == Outcome::untrusted ? Counter::remote_refused : Counter::corrupt);
        bad.push_back(tier.get());
      }
      continue;
    }
    if (seen->damage())
      count(key.backend, Counter::corrupt);
    if (!*seen)
      continue;
    if (other_request) {
      refuse_other_request(*tier, key);
      continue;
    }
    if (used) {
      if (copy && memory == Memory::keep)
        static_cast<void>(m_memory->put(key.digest, *copy)); // the memory tier never fails
      if (copy && tier->remote)
        m_write_back.backfill(key, std::move(*copy));
      return std::optional<Served>(std::move(served));
    }
    if (!refusal(used.error()))
      return std::move(used).error();
    reject(*tier, key, used.error(), info);
    refused.tiers.push_back(tier.get());
  }
  return std::optional<Served>();
}

void CacheCore::reject(Tier& tier, const Key& key, const Error& why, BuildInfo& info) {
  count(key.backend, Counter::rejected);
  // A remote's entry is the fleet's: one machine's runtime refusing it is no reason to delete it
  // for the others (this machine's compile is written over it, in the background).
  const bool evict = tier.store->writable() && !tier.remote;
  // Once per entry and process: a read-only tier keeps the binary, and each request refuses it.
  log::write_once(LogLevel::warn, "refused:" + tier.store->name() + ":" + key.digest.hex(),
                  "stored " + key.backend + " binary " + key.digest.hex() + " (" +
                      tier.store->name() + " tier) refused: " + why.message +
                      (evict ? "; evicted, compiling it again"
                       : tier.remote
                           ? "; left on the remote for the machines it serves, compiling it here"
                           : "; the tier is read-only, compiling it"));
  if (evict)
    static_cast<void>(tier.store->remove(key.digest)); // a failed removal is replaced by the store
  static_cast<void>(m_memory->remove(key.digest));
  info.note = "stored binary rejected (" + why.message + "); rebuilt";
}

void CacheCore::refuse_other_request(Tier& tier, const Key& key) {
  // The digest covers every field, so this only trips on a digest collision or a bug; either
  // way the entry must not be handed out.
  count(key.backend, Counter::corrupt);
  log::warn("entry " + key.digest.hex() + " in tier '" + tier.store->name() +
            "' was stored for a different request; treated as a miss");
  if (tier.store->writable())
    static_cast<void>(tier.store->remove(key.digest)); // seen once, then replaced by the compile
}

Expected<void> CacheCore::obtain(const Key& key, const Compiler& compile, const EntryReceiver& use,
                                 BuildInfo& info, Memory memory, Refusals refused) {
  info.key = key.digest;
  auto found = walk(key, use, info, refused, memory);
  if (!found)
    return std::move(found).error();
  if (*found) {
    count_hit(key, **found, info);
    return {};
  }
  auto flight = m_compiles.run(
      key.digest, [&] { return compile_and_store(key, compile, use, info, refused, memory); });
  if (!flight.value)
    return std::move(flight.value).error();
  if (flight.leader)
    return {};
  const auto& entry = flight.value->entry;
  if (!entry) // the leader found it stored, or stores it later: look again (it holds the lease)
    return obtain(key, compile, use, info, memory, std::move(refused));
  auto used = use(EntryView(*entry));
  if (!used)
    return used;
  count_hit(key, Served{"memory", entry->compile_ns, entry->payload.size()}, info);
  return {};
}

Expected<CacheCore::Flight> CacheCore::compile_and_store(const Key& key, const Compiler& compile,
                                                         const EntryReceiver& use, BuildInfo& info,
                                                         Refusals& refused, Memory memory) {
  // Another thread may have finished the same key since the walk, or another process may be
  // compiling it: claim() waits for that one and serves from the tiers.
  auto claim = this->claim(key, use, info, refused, memory);
  if (!claim)
    return std::move(claim).error();
  if (claim->served) {
    count_hit(key, *claim->served, info);
    return Flight{};
  }
  // The host's cap on compiles at once (JITCACHE_MAX_COMPILES): taken once the key is this
  // process's to compile, so that a waiter for a slot holds no one else up but its own key.
  std::unique_ptr<CompileSlot> slot;
  if (claim->lease_dir) {
    auto taken =
        CompileSlot::acquire(*claim->lease_dir, CompileSlot::default_count(m_config.max_compiles));
    if (taken)
      slot = std::move(*taken);
    else
      log::write_once(LogLevel::warn, "slot:" + m_tiers.user()->name(),
                      taken.error().message + "; compiling without the host's cap");
  }
  const Stopwatch clock;
  auto compiled = compile();
  slot.reset();
  if (!compiled) {
    count(key.backend, Counter::compile_errors);
    return std::move(compiled).error();
  }
  const std::uint64_t compile_ns = clock.ns();
  // What `compiles` counts: real compiles. A build over the runtime's cache, warm from another
  // process's compile of the same program whose store is still pending, is a `warm_builds`.
  auto ticket = std::make_shared<Ticket>(
      m_records, key.backend, std::move(claim->lease), std::move(claim->remote_lease),
      claim->handed_over ? Counter::warm_builds : Counter::compiles);
  Flight flight;
  std::uint64_t bytes = 0;
  if (compiled->entry) {
    Entry& entry = *compiled->entry;
    entry.backend = key.backend;
    entry.compile_ns = compile_ns;
    entry.key_fields = key.stored_fields;
    if (auto used = use(EntryView(entry)); !used)
      return std::move(used).error(); // a fresh binary refused: nothing is stored
    m_write_back.write(key, entry, ticket.get());
    bytes = entry.payload.size();
    flight.entry = std::make_shared<const Entry>(std::move(entry));
  } else if (compiled->later) {
    // The entry made later says what its hits save: what the application paid, this compile
    // and the compile that producing the entry does (reading a PoCL binary compiles every
    // kernel of the program, which the application pays at its first launches without a hit).
    // A refresh reads kernels compiled by then and keeps the first production's time.
    auto produced_ns = std::make_shared<std::atomic<std::uint64_t>>(0);
    const auto timed = [compile_ns, produced_ns](std::function<Expected<Entry>()> produce) {
      return std::function<Expected<Entry>()>(
          [produce = std::move(produce), compile_ns, produced_ns]() -> Expected<Entry> {
            const Stopwatch clock;
            auto entry = produce();
            std::uint64_t first = 0;
            produced_ns->compare_exchange_strong(first, clock.ns());
            if (entry)
              entry->compile_ns = compile_ns + produced_ns->load();
            return entry;
          });
    };
    auto refresh = compiled->refresh ? timed(std::move(compiled->refresh)) : nullptr;
    if (compiled->handover) {
      // Other processes need not wait for a store that happens after this one exits; they
      // build over the runtime's cache this compile warmed (marked first: they look once the
      // lease is let go).
      if (claim->lease_dir)
        CompileLease::mark_handed_over(*claim->lease_dir, key.digest);
      ticket->release();
      // The process that stores it adds the kernels' compile to the application's.
      compiled->handover->compile_ns = compile_ns;
      m_write_back.hand_over_later(key, std::move(*compiled->handover),
                                   timed(std::move(compiled->later)), std::move(refresh));
    } else {
      m_write_back.defer(key, timed(std::move(compiled->later)), std::move(refresh), ticket);
    }
  }
  count(key.backend, Counter::misses);
  info.outcome = Outcome::miss;
  info.tier = "compile";
  info.compile_ms = compile_ns / 1e6;
  info.bytes = bytes;
  return flight;
}

Expected<std::optional<Served>> CacheCore::serve(const Key& key, const EntryReceiver& use,
                                                 BuildInfo& info, Refusals& refusals,
                                                 Memory memory) {
  info.key = key.digest;
  return walk(key, use, info, refusals, memory);
}

void CacheCore::count_hit(const Key& key, const Served& served, BuildInfo& info) {
  count_hits(key.backend, served.tier);
  count(key.backend, Counter::saved_ns, served.compile_ns);
  info.key = key.digest;
  info.outcome = Outcome::hit;
  info.tier = served.tier;
  info.compile_ms = 0;
  info.bytes = served.bytes;
}

BuildInfo CacheCore::memory_hit(const std::string& backend, const BuildInfo& first) {
  count_hits(backend, "memory");
  BuildInfo info;
  info.key = first.key;
  info.device = first.device;
  info.bytes = first.bytes;
  info.outcome = Outcome::hit;
  info.tier = "memory";
  return info;
}

std::vector<std::vector<KeyField>>
CacheCore::packaged_toolchains(const PackageTarget& target) const {
  std::vector<std::vector<KeyField>> found;
  if (!persistent(target.backend))
    return found;
  std::vector<std::string> seen;
  for (const Tier* tier : m_tiers.packages()) {
    if (tier->dead)
      continue;
    for (std::string& stored : tier->packages->toolchains(target)) {
      if (std::find(seen.begin(), seen.end(), stored) != seen.end())
        continue;
      if (auto fields = decode_key_fields(stored))
        found.push_back(std::move(*fields));
      seen.push_back(std::move(stored));
    }
  }
  return found;
}

std::optional<std::string> CacheCore::packaged_record(const std::string& backend,
                                                      const Digest& name) const {
  if (m_tiers.packages().empty() || !persistent(backend))
    return std::nullopt;
  for (const Tier* tier : m_tiers.packages()) {
    if (tier->dead)
      continue;
    if (auto found = tier->packages->record(backend, name))
      return found;
  }
  return std::nullopt;
}

std::optional<Found> CacheCore::lookup(const Key& key) {
  std::optional<Found> found;
  BuildInfo info;
  Refusals refused;
  auto served = walk(
      key,
      [&](const EntryView& entry) -> Expected<void> {
        found = Found{to_entry(entry), ""};
        return {};
      },
      info, refused, Memory::keep);
  if (!served || !*served)
    return std::nullopt;
  found->tier = (*served)->tier;
  return found;
}

bool CacheCore::user_usable(const std::string& backend) const {
  return m_tiers.user_tier() && !m_tiers.user_tier()->dead && persistent(backend);
}

bool CacheCore::make_user_tier() {
  if (!m_tiers.user_tier() || m_tiers.user_tier()->dead)
    return false;
  if (!m_tiers.deferred())
    return true;
  auto made = m_tiers.deferred()->open();
  if (made)
    return true;
  if (!m_tiers.user_tier()->dead.exchange(true))
    log::write_once(LogLevel::warn, "user:" + made.error().message,
                    made.error().message + "; continuing without the user tier");
  return false;
}

std::optional<Record> CacheCore::recall(const std::string& backend, const Digest& name) {
  std::optional<Record> record;
  peek(backend, name, [&](const RecordView& view) {
    if (ProvenStamps::process().hold(view.guards))
      record = Record{std::string(view.guards), std::string(view.payload)};
  });
  return record;
}

bool CacheCore::peek(const std::string& backend, const Digest& name,
                     const std::function<void(const RecordView&)>& use) {
  if (!user_usable(backend))
    return false;
  remember_what_was_made(&name);
  // `take` on the bytes stored under `of` that it takes (an intact record): those remembered by
  // this process and not written yet come first, then the user tier's, in place.
  const auto stored = [&](const Digest& of, const std::function<bool(std::string_view)>& take) {
    if (const std::optional<std::string> unsaved = m_records.unsaved(of); unsaved && take(*unsaved))
      return true;
    bool taken = false;
    auto seen =
        m_tiers.user()->visit_record(of, [&](std::string_view bytes) { taken = take(bytes); });
    if (!seen) // the key is built from the files instead
      mark_dead(*m_tiers.user_tier(), seen.error());
    return taken;
  };
  // A record that names parts is used with the bytes this process knows of them (KnownParts), in
  // place; the parts it does not know yet are read (each out of the tier's read, copied), and
  // the record read again.
  std::vector<Digest> unknown;
  bool used = false;
  const auto take = [&](std::string_view bytes) {
    auto record = view_record(bytes);
    if (!record)
      return false;
    std::shared_ptr<const std::string> parts[2];
    for (int i = 0; i < 2; ++i)
      if (const auto& part = i == 0 ? record->guards_part : record->payload_part)
        if (!(parts[i] = KnownParts::process().bytes(*part)))
          unknown.push_back(*part);
    if (unknown.empty()) {
      use(RecordView{parts[0] ? *parts[0] : record->guards, parts[1] ? *parts[1] : record->payload,
                     std::nullopt, std::nullopt});
      used = true;
    }
    return true;
  };
  if (!stored(name, take) || unknown.empty())
    return used;
  for (const Digest& part : unknown)
    if (!stored(part, [&](std::string_view bytes) {
          auto held = part_bytes(bytes);
          if (held)
            KnownParts::process().add_bytes(part, std::make_shared<const std::string>(*held));
          return held.has_value();
        }))
      return false;
  unknown.clear();
  stored(name, take);
  return used;
}

bool CacheCore::claim_part(const Digest& part) {
  const std::lock_guard<std::mutex> lock(m_parts_mutex);
  if (m_claimed_parts.size() >= k_claimed_parts)
    m_claimed_parts.clear();
  return m_claimed_parts.insert(part).second;
}

void CacheCore::remember(const std::string& backend, const Digest& name, const Record& record) {
  if (!user_usable(backend) || !m_tiers.user()->writable())
    return;
  // Written at flush, all in one write: a synced write beside a request that a package serves
  // delays its first launch even from another thread (PoCL, a new machine's first run: 0.6 ms
  // of 11, most of it making the user tier), and one write for all costs less than one each.
  // A long-lived process that holds many (a CUB kernel's is 110 KB) writes them sooner, in the
  // background, so that what it holds stays bounded.
  Records full = m_records.hold(name, encode_record(record));
  if (!full.empty())
    m_write_back.push([this, records = std::move(full)] { m_records.write_records(records); });
}

void CacheCore::remember_made(const std::string& backend, const Digest& name,
                              std::shared_future<Made> made) {
  const std::lock_guard<std::mutex> lock(m_making_mutex);
  m_making.push_back(Making{backend, name, std::move(made), fork_generation()});
}

void CacheCore::remember_what_was_made(const Digest* name) {
  std::vector<Making> now;
  {
    const std::lock_guard<std::mutex> lock(m_making_mutex);
    if (m_making.empty())
      return;
    for (auto it = m_making.begin(); it != m_making.end();) {
      // In a fork()ed child the future is not even asked: its state's lock may have been held
      // by the thread making it, which the child does not have.
      if (it->generation != fork_generation()) {
        it = m_making.erase(it);
      } else if (!name || it->name == *name ||
                 it->made.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        now.push_back(std::move(*it));
        it = m_making.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const Making& making : now) {
    if (making.made.wait_for(k_made_wait) != std::future_status::ready) {
      log::info("this machine's manifest of a packaged key was not made in time; not remembered");
      continue;
    }
    for (const auto& [record_name, record] : making.made.get())
      remember(making.backend, record_name, record);
  }
}

std::shared_ptr<UserTier> CacheCore::usable_user_tier(const std::string& backend) const {
  return user_usable(backend) ? m_tiers.user() : nullptr;
}

bool CacheCore::user_tier_writes() const {
  return m_tiers.user() && m_tiers.user()->writable();
}

void CacheCore::user_tier_failed(const Error& error) {
  if (m_tiers.user_tier())
    mark_dead(*m_tiers.user_tier(), error);
}

bool CacheCore::leases_apply(const std::string& backend) const {
  return user_usable(backend) && user_tier_writes();
}

Expected<CacheCore::Claim> CacheCore::claim(const Key& key, const EntryReceiver& use,
                                            BuildInfo& info, Refusals& refused, Memory memory) {
  Claim claim;
  auto served = walk(key, use, info, refused, memory);
  if (!served)
    return std::move(served).error();
  claim.served = std::move(*served);
  if (claim.served)
    return claim; // a hit touches no lease
  // acquire() looks again before it waits, and once it holds the lease.
  std::optional<Error> failed;
  const auto ready = [&] {
    auto again = walk(key, use, info, refused, memory);
    if (!again)
      failed = std::move(again).error();
    else
      claim.served = std::move(*again);
    return failed || claim.served;
  };
  if (user_usable(key.backend))
    make_user_tier(); // a compile follows: making the tier costs nothing that matters now
  if (leases_apply(key.backend)) {
    auto dir = m_tiers.user()->lease_dir();
    auto lease = dir ? CompileLease::acquire(*dir, key.digest, ready, CompileLease::Options{})
                     : Expected<std::unique_ptr<CompileLease>>(dir.error());
    if (failed)
      return std::move(*failed);
    if (!lease)
      log::write_once(LogLevel::warn, "lease:" + m_tiers.user()->name(),
                      lease.error().message + "; compiling without waiting for other processes");
    else
      claim.lease = std::move(*lease);
    if (claim.served)
      return claim;
    if (dir) {
      claim.handed_over = CompileLease::handed_over(*dir, key.digest);
      claim.lease_dir = std::move(*dir);
    }
  }
  // The machine's lease first: one process per machine asks the fleet.
  if (auto ok = claim_remote(key, ready, claim, failed); !ok)
    return std::move(ok).error();
  return claim;
}

Expected<void> CacheCore::claim_remote(const Key& key, const std::function<bool()>& ready,
                                       Claim& claim, std::optional<Error>& failed) {
  if (!persistent(key.backend))
    return {};
  for (Tier* tier : m_tiers.remotes()) {
    if (!up(*tier) || !tier->store->writable())
      continue;
    auto lease = RemoteLease::acquire(tier->remote, key.digest, ready, RemoteLease::Options{});
    if (failed)
      return std::move(*failed);
    if (lease)
      claim.remote_lease = std::move(*lease);
    else if (lease.error().code == ErrorCode::unsupported)
      log::write_once(LogLevel::warn, "remote-lease:" + key.digest.hex(),
                      lease.error().message + "; compiling it here too");
    else
      mark_dead(*tier, lease.error());
    return {};
  }
  return {};
}

void CacheCore::store(const Key& key, const Entry& entry) {
  m_write_back.store(key, entry);
}

void CacheCore::adopt(const Key& key, const Entry& entry, bool write) {
  if (write)
    m_write_back.store(key, entry);
  else
    static_cast<void>(m_memory->put(key.digest, entry)); // the memory tier never fails
}

void CacheCore::store_later(const Key& key, std::function<Expected<Entry>()> produce,
                            std::function<Expected<Entry>()> refresh) {
  m_write_back.defer(key, std::move(produce), std::move(refresh), nullptr);
}

void CacheCore::flush() {
  remember_what_was_made(nullptr);
  m_write_back.flush();
  m_records.flush_unsaved();
}

Expected<void> CacheCore::wait_for_stores(std::chrono::milliseconds limit) {
  flush();
  return m_write_back.wait_for_handed_over(limit);
}

void CacheCore::evict(const Key& key) {
  for (auto& tier : m_tiers.all())
    if (up(*tier) && tier->store->writable())
      static_cast<void>(tier->store->remove(key.digest)); // best effort: a miss compiles again
}

void CacheCore::count(const std::string& backend, Counter counter, std::uint64_t amount) {
  m_records.count(backend, counter, amount);
}

void CacheCore::count_hits(const std::string& backend, const std::string& tier) {
  m_records.count_hits(backend, tier);
}

Stats CacheCore::session_stats() const {
  return m_records.session_stats();
}

std::vector<std::shared_ptr<Store>> CacheCore::tiers() const {
  return m_tiers.stores();
}

} // namespace jitcache::detail
