#include "core/engine/write_back.hpp"

#include "core/engine/cache_core.hpp"
#include "core/engine/compile_lease.hpp"
#include "core/engine/store_handover.hpp"
#include "core/support/log.hpp"
#include "core/tiers/memory_store.hpp"
#include "core/tiers/remote/remote_store.hpp"

#include <xxhash.h>

#include <filesystem>

namespace jitcache::detail {

namespace {

// Deferred stores run on up to this many threads.
constexpr std::size_t k_store_workers = 4;

// What a store needs of `key` (write() reads its digest, backend and stored fields): a key built
// from files holds each header's whole content in its fields (megabytes for a CuPy kernel), and
// copying them into every deferred store cost 12% of an NVRTC front-end's miss.
Key stored_part(const Key& key) {
  Key part;
  part.digest = key.digest;
  part.backend = key.backend;
  part.stored_fields = key.stored_fields;
  return part;
}

} // namespace

Ticket::Ticket(RecordBuffer& counters, std::string backend, std::unique_ptr<CompileLease> lease,
               std::shared_ptr<RemoteLease> remote_lease, Counter counter)
    : m_counters(counters), m_backend(std::move(backend)), m_lease(std::move(lease)),
      m_remote_lease(std::move(remote_lease)), m_counter(counter) {
  m_counters.count_in_session(m_backend, m_counter);
}

Ticket::~Ticket() {
  if (m_counted)
    return;
  m_counters.count_unsaved(m_backend, m_counter);
}

std::optional<Stats> Ticket::take_count() {
  if (m_counted)
    return std::nullopt;
  Stats count;
  count.add(m_backend, m_counter);
  return count;
}

void Ticket::release() {
  m_lease.reset();
  m_remote_lease.reset();
}

WriteBack::WriteBack(CacheCore& core)
    : m_core(core), m_config(core.m_config), m_memory(core.m_memory), m_tiers(core.m_tiers),
      m_queue(k_store_workers) {}

bool WriteBack::persistent(const std::string& backend) const {
  return m_core.persistent(backend);
}

bool WriteBack::up(const Tier& tier) const {
  return m_core.up(tier);
}

void WriteBack::mark_dead(Tier& tier, const Error& error) {
  m_core.mark_dead(tier, error);
}

bool WriteBack::user_usable(const std::string& backend) const {
  return m_core.user_usable(backend);
}

bool WriteBack::make_user_tier() {
  return m_core.make_user_tier();
}

void WriteBack::count(const std::string& backend, Counter counter, std::uint64_t amount) {
  m_core.count(backend, counter, amount);
}

void WriteBack::store(const Key& key, const Entry& entry) {
  Entry stored = entry;
  stored.key_fields = key.stored_fields;
  write(key, stored, nullptr);
}

void WriteBack::write(const Key& key, const Entry& entry, Ticket* ticket) {
  static_cast<void>(m_memory->put(key.digest, entry)); // the memory tier never fails
  if (persistent(key.backend)) {
    make_user_tier();
    write_remote(key, entry, ticket ? ticket->remote_lease() : nullptr);
    for (auto& tier : m_tiers.all()) {
      if (!tier->persistent || tier->remote || tier->dead || !tier->store->writable())
        continue;
      Expected<void> ok;
      std::optional<Stats> compile_count;
      if (ticket && tier.get() == m_tiers.user_tier() && (compile_count = ticket->take_count())) {
        ok = m_tiers.user()->put(key.digest, entry, *compile_count);
        if (ok)
          ticket->counted();
      } else {
        ok = tier->store->put(key.digest, entry);
      }
      if (!ok) {
        count(key.backend, Counter::store_errors);
        log::write_once(LogLevel::warn, "put:" + tier->store->name() + to_string(ok.error().code),
                        ok.error().message + "; the kernel is still used, but not kept");
        continue;
      }
      count(key.backend, Counter::bytes_stored, entry.payload.size());
      if (tier.get() == m_tiers.user_tier())
        if (auto leases = m_tiers.user()->lease_dir())
          CompileLease::clear_handed_over(*leases, key.digest);
    }
  }
  if (ticket)
    ticket->release();
}

void WriteBack::write_remote(const Key& key, const Entry& entry,
                             std::shared_ptr<RemoteLease> lease) {
  std::shared_ptr<const Entry> copy;
  for (Tier* tier : m_tiers.remotes()) {
    if (!up(*tier) || !tier->store->writable() || !tier->remote->fits(entry.payload.size()))
      continue;
    if (!copy)
      copy = std::make_shared<const Entry>(entry);
    m_queue.push([this, key, copy, lease, tier] {
      auto ok = tier->store->put(key.digest, *copy);
      if (ok) {
        count(key.backend, Counter::remote_writes);
      } else if (ok.error().code == ErrorCode::io_error ||
                 ok.error().code == ErrorCode::runtime_error) {
        mark_dead(*tier, ok.error());
      } else if (ok.error().code == ErrorCode::store_full) {
        // Over max_bytes once encoded (the check above saw the payload alone): not sent, as
        // documented; no store error.
        log::debug(ok.error().message);
      } else {
        count(key.backend, Counter::store_errors);
        log::write_once(LogLevel::warn,
                        "put:" + tier->remote->url().display() + to_string(ok.error().code),
                        ok.error().message);
      }
    });
  }
}

void WriteBack::backfill(const Key& key, Entry entry) {
  if (!user_usable(key.backend) || !m_tiers.user()->writable())
    return;
  m_queue.push([this, key, entry = std::move(entry)] {
    // Keyed like write()'s warning: a full or failing disk is one warning, not one per write.
    if (auto ok = m_tiers.user()->put(key.digest, entry); !ok) {
      count(key.backend, Counter::store_errors);
      log::write_once(LogLevel::warn, "put:" + m_tiers.user()->name() + to_string(ok.error().code),
                      ok.error().message + "; the remote's kernel is used, but not kept here");
    } else {
      count(key.backend, Counter::bytes_stored, entry.payload.size());
    }
  });
}

void WriteBack::defer(const Key& key, std::function<Expected<Entry>()> produce,
                      std::function<Expected<Entry>()> refresh, std::shared_ptr<Ticket> ticket) {
  std::shared_ptr<Refresh> again;
  if (refresh) {
    again = std::make_shared<Refresh>(Refresh{stored_part(key), std::move(refresh), 0});
    std::lock_guard<std::mutex> lock(m_refresh_mutex);
    m_refresh.push_back(again);
  }
  m_queue.push([this, key = stored_part(key), produce = std::move(produce), again, ticket] {
    auto entry = produce();
    if (!entry) {
      log::warn("could not get the binary to store (" + entry.error().message +
                "); the next process compiles again");
      return;
    }
    entry->key_fields = key.stored_fields;
    write(key, *entry, ticket.get());
    if (again)
      again->stored = XXH3_64bits(entry->payload.data(), entry->payload.size());
  });
}

void WriteBack::refresh() {
  std::vector<std::shared_ptr<Refresh>> items;
  {
    std::lock_guard<std::mutex> lock(m_refresh_mutex);
    items = m_refresh;
  }
  for (auto& item : items) {
    auto entry = item->produce();
    if (!entry) {
      log::debug("could not refresh key " + item->key.digest.hex() + ": " + entry.error().message);
      continue;
    }
    const std::uint64_t hash = XXH3_64bits(entry->payload.data(), entry->payload.size());
    if (hash == item->stored)
      continue;
    log::debug("binary for key " + item->key.digest.hex() + " changed since it was stored (" +
               std::to_string(entry->payload.size()) + " bytes); storing it again");
    store(item->key, *entry);
    item->stored = hash;
  }
}

void WriteBack::hand_over_pending() {
  std::vector<Handover> pending;
  {
    std::lock_guard<std::mutex> lock(m_handover_mutex);
    std::swap(pending, m_handovers);
  }
  if (pending.empty())
    return;
  std::vector<RequestRecord> records;
  for (const Handover& item : pending)
    records.push_back(item.record);
  Expected<std::filesystem::path> file =
      Error(ErrorCode::runtime_missing, "no jitcache executable found to store in the background");
  if (!m_tiers.user() || !make_user_tier()) {
    file = Error(ErrorCode::io_error, "the user tier is not usable");
  } else if (auto worker = store_worker()) {
    // The user tier's own folder: the worker stores into the cache that folder belongs to.
    if (auto leases = m_tiers.user()->lease_dir())
      file =
          hand_over(*worker, leases->path().parent_path() / "pending", records, m_config.variables);
    else
      file = std::move(leases).error();
  }
  if (file) {
    log::debug("handed " + std::to_string(records.size()) + " store(s) over to a detached " +
               "process: " + file->string());
    for (const Handover& item : pending)
      count(item.key.backend, Counter::handed_over);
    return;
  }
  log::write_once(LogLevel::warn, "handover:" + file.error().message,
                  file.error().message + "; storing in this process instead (exit waits for it; "
                                         "JITCACHE_OPENCL_STORE=wait says so without trying)");
  for (Handover& item : pending)
    defer(item.key, std::move(item.produce), std::move(item.refresh), nullptr);
}

void WriteBack::hand_over_later(const Key& key, RequestRecord record,
                                std::function<Expected<Entry>()> produce,
                                std::function<Expected<Entry>()> refresh) {
  std::lock_guard<std::mutex> lock(m_handover_mutex);
  m_handovers.push_back(
      Handover{stored_part(key), std::move(record), std::move(produce), std::move(refresh)});
}

void WriteBack::push(std::function<void()> task) {
  m_queue.push(std::move(task));
}

void WriteBack::flush() {
  hand_over_pending();
  m_queue.wait_idle();
  refresh();
}

Expected<void> WriteBack::wait_for_handed_over(std::chrono::milliseconds limit) {
  if (m_config.cache_dir.empty() || m_config.read_only)
    return {};
  // The folder hand_over_pending names: the user tier's own, beside its leases.
  const std::filesystem::path pending = m_config.cache_dir / "pending";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(pending, ec)))
    return {};
  auto worker = store_worker();
  if (!worker)
    return Error(ErrorCode::runtime_missing, "stores are pending in " + pending.string() +
                                                 " and no jitcache executable " +
                                                 "is found to wait for them");
  return jitcache::detail::wait_for_stores(*worker, pending, m_config.variables, limit);
}

void WriteBack::forget_refreshes() {
  std::lock_guard<std::mutex> lock(m_refresh_mutex);
  m_refresh.clear();
}

} // namespace jitcache::detail
