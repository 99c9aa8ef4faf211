#include "core/cache_core.hpp"

#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/user_store.hpp"

#include <xxhash.h>

namespace jitcache::detail {

namespace {

// Deferred stores run on up to this many threads.
constexpr std::size_t k_store_workers = 4;

} // namespace

CacheCore::CacheCore(Config config, std::optional<std::vector<std::shared_ptr<Store>>> stores)
    : m_config(std::move(config)),
      m_memory(std::make_shared<MemoryStore>(m_config.memory_bytes)) {
  log::set_level(m_config.log_level);
  if (!stores) {
    stores.emplace();
    const bool any_persistent =
        std::any_of(std::begin(k_backends), std::end(k_backends),
                    [&](const char* b) { return m_config.persistence(b).enabled; });
    if (any_persistent) {
      auto user = open_user_store(m_config, m_config.read_only);
      if (user)
        stores->push_back(*user);
      else
        log::write_once(LogLevel::warn, "user:" + user.error().message,
                        user.error().message + "; continuing without the user tier");
    }
  }
  for (auto& store : *stores) {
    auto tier = std::make_unique<Tier>();
    tier->store = store;
    if (!m_user && (m_user = std::dynamic_pointer_cast<LmdbStore>(store)))
      m_user_tier = tier.get();
    m_persistent.push_back(std::move(tier));
  }
}

CacheCore::~CacheCore() {
  flush();
  {
    std::lock_guard<std::mutex> lock(m_queue_mutex);
    m_stopping = true;
  }
  m_queue_cv.notify_all();
  for (std::thread& worker : m_workers)
    worker.join();
  m_refresh.clear(); // the producers hold runtime objects: release them before the handles
  m_handles.clear();
}

bool CacheCore::persistent(const std::string& backend) const {
  return m_config.persistence(backend).enabled;
}

void CacheCore::mark_dead(Tier& tier, const Error& error) {
  if (!tier.dead.exchange(true)) {
    count("all", "dead_tiers", 1);
    log::warn("tier '" + tier.store->name() + "' failed (" + error.message +
              "); skipping it for the rest of this process");
  }
}

std::optional<Found> CacheCore::lookup(const Key& key) {
  if (auto hit = m_memory->get(key.digest); hit && *hit)
    return Found{std::move(**hit), "memory"};
  if (!persistent(key.backend))
    return std::nullopt;
  for (auto& tier : m_persistent) {
    if (tier->dead)
      continue;
    const std::uint64_t corrupt_before = m_user ? m_user->corrupt_seen() : 0;
    auto got = tier->store->get(key.digest);
    if (!got) {
      mark_dead(*tier, got.error());
      continue;
    }
    count_corrupt_since(key.backend, corrupt_before);
    if (!*got)
      continue;
    if ((*got)->key_fields != key.stored_fields) {
      refuse_other_request(*tier, key);
      continue;
    }
    m_memory->put(key.digest, **got);
    return Found{std::move(**got), tier->store->name()};
  }
  return std::nullopt;
}

std::optional<std::string> CacheCore::use_stored(const Key& key,
                                                 const std::function<void(const EntryView&)>& use) {
  if (!m_user_tier || m_user_tier->dead || !persistent(key.backend))
    return std::nullopt;
  const std::uint64_t corrupt_before = m_user->corrupt_seen();
  bool answered = false;
  auto seen = m_user->visit(key.digest, [&](const EntryView& entry) {
    if ((answered = entry.key_fields == key.stored_fields))
      use(entry);
  });
  if (!seen) {
    mark_dead(*m_user_tier, seen.error());
    return std::nullopt;
  }
  count_corrupt_since(key.backend, corrupt_before);
  if (!*seen)
    return std::nullopt;
  if (!answered) {
    refuse_other_request(*m_user_tier, key);
    return std::nullopt;
  }
  return m_user->name();
}

void CacheCore::count_corrupt_since(const std::string& backend, std::uint64_t corrupt_before) {
  if (m_user && m_user->corrupt_seen() != corrupt_before)
    count(backend, counter::corrupt, 1);
}

void CacheCore::refuse_other_request(Tier& tier, const Key& key) {
  // The digest covers every field, so this only trips on a digest collision or a bug; either
  // way the entry must not be handed out.
  count(key.backend, counter::corrupt, 1);
  log::warn("entry " + key.digest.hex() + " in tier '" + tier.store->name() +
            "' was stored for a different request; treated as a miss");
  if (tier.store->writable() && !m_config.read_only)
    tier.store->remove(key.digest); // seen once, then replaced by the compile
}

std::optional<Record> CacheCore::recall(const std::string& backend, const Digest& name) {
  std::optional<Record> record;
  peek(backend, name, [&](const RecordView& view) {
    if (unchanged(view.guards))
      record = Record{std::string(view.guards), std::string(view.payload)};
  });
  return record;
}

bool CacheCore::peek(const std::string& backend, const Digest& name,
                     const std::function<void(const RecordView&)>& use) {
  if (!m_user_tier || m_user_tier->dead || !persistent(backend))
    return false;
  bool used = false;
  m_user->visit_record(name, [&](std::string_view bytes) {
    if (auto record = view_record(bytes)) {
      use(*record);
      used = true;
    }
  });
  return used;
}

void CacheCore::remember(const std::string& backend, const Digest& name, const Record& record) {
  if (!m_user_tier || m_user_tier->dead || !m_user->writable() || !persistent(backend) ||
      m_config.read_only)
    return;
  if (auto ok = m_user->put_record(name, encode_record(record)); !ok)
    log::info("could not remember record " + name.hex() + ": " + ok.error().message);
}

void CacheCore::count_hit(const Key& key, const std::string& tier, std::uint64_t compile_ns,
                          std::uint64_t bytes, BuildInfo& info) {
  count(key.backend, counter::hits_prefix + tier, 1);
  count(key.backend, counter::saved_ns, compile_ns);
  info.outcome = Outcome::hit;
  info.tier = tier;
  info.bytes = bytes;
}

bool CacheCore::leases_apply(const std::string& backend) const {
  return m_user_tier && !m_user_tier->dead && m_user->writable() && persistent(backend) &&
         !m_config.read_only;
}

CacheCore::Claim CacheCore::claim(const Key& key) {
  Claim claim;
  claim.found = lookup(key);
  if (claim.found || !leases_apply(key.backend))
    return claim; // a hit touches no lease file
  // acquire() looks again before it waits, and once it holds the lease.
  const auto ready = [&] {
    claim.found = lookup(key);
    return claim.found.has_value();
  };
  auto lease =
      CompileLease::acquire(m_user->dir() / "leases", key.digest, ready, CompileLease::Options{});
  if (!lease)
    log::write_once(LogLevel::warn, "lease:" + m_user->dir().string(),
                    lease.error().message + "; compiling without waiting for other processes");
  else
    claim.lease = std::move(*lease);
  return claim;
}

CacheCore::Compiled::Compiled(CacheCore& core, std::string backend,
                              std::unique_ptr<CompileLease> lease)
    : m_core(core), m_backend(std::move(backend)), m_lease(std::move(lease)) {}

CacheCore::Compiled::~Compiled() {
  if (!m_counted)
    m_core.count_unsaved(m_backend, counter::compiles, 1);
}

std::shared_ptr<CacheCore::Compiled> CacheCore::compiled(const Key& key,
                                                         std::unique_ptr<CompileLease> lease) {
  {
    std::lock_guard<std::mutex> lock(m_stats_mutex);
    m_session.add(key.backend, counter::compiles, 1);
  }
  return std::shared_ptr<Compiled>(new Compiled(*this, key.backend, std::move(lease)));
}

void CacheCore::store(const Key& key, const Entry& given, Compiled* compiled) {
  Entry entry = given;
  entry.key_fields = key.stored_fields;
  m_memory->put(key.digest, entry);
  if (!persistent(key.backend) || m_config.read_only)
    return;
  for (auto& tier : m_persistent) {
    if (tier->dead || !tier->store->writable())
      continue;
    Expected<void> ok;
    if (compiled && !compiled->m_counted && tier.get() == m_user_tier) {
      Stats count;
      count.add(key.backend, counter::compiles, 1);
      ok = m_user->put(key.digest, entry, count);
      compiled->m_counted = ok.has_value();
    } else {
      ok = tier->store->put(key.digest, entry);
    }
    if (!ok) {
      count(key.backend, counter::store_errors, 1);
      log::write_once(LogLevel::warn,
                      "put:" + tier->store->name() + to_string(ok.error().code),
                      ok.error().message + "; the kernel is still used, but not kept");
      continue;
    }
    count(key.backend, counter::bytes_stored, entry.payload.size());
  }
  if (compiled) // waiters in other processes find the entry from now on
    compiled->m_lease.reset();
}

void CacheCore::store_later(const Key& key, std::function<Expected<Entry>()> produce,
                            std::function<Expected<Entry>()> refresh,
                            std::shared_ptr<Compiled> compiled) {
  std::lock_guard<std::mutex> lock(m_queue_mutex);
  if (m_workers.size() < k_store_workers && m_running + m_queue.size() >= m_workers.size())
    m_workers.emplace_back([this] { worker(); });
  std::shared_ptr<Refresh> again;
  if (refresh) {
    again = std::make_shared<Refresh>(Refresh{key, std::move(refresh), 0});
    m_refresh.push_back(again);
  }
  m_queue.push_back([this, key, produce = std::move(produce), again, compiled] {
    auto entry = produce();
    if (!entry) {
      log::warn("could not get the binary to store (" + entry.error().message +
                "); the next process compiles again");
      return;
    }
    store(key, *entry, compiled.get());
    if (again)
      again->stored = XXH3_64bits(entry->payload.data(), entry->payload.size());
  });
  m_queue_cv.notify_one();
}

void CacheCore::refresh() {
  std::vector<std::shared_ptr<Refresh>> items;
  {
    std::lock_guard<std::mutex> lock(m_queue_mutex);
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

void CacheCore::worker() {
  std::unique_lock<std::mutex> lock(m_queue_mutex);
  for (;;) {
    m_queue_cv.wait(lock, [&] { return m_stopping || !m_queue.empty(); });
    if (m_queue.empty())
      return;
    auto task = std::move(m_queue.front());
    m_queue.pop_front();
    ++m_running;
    lock.unlock();
    task();
    task = nullptr; // what it held (a lease, a compile to count) goes before flush() sees it done
    lock.lock();
    --m_running;
    m_idle_cv.notify_all();
  }
}

void CacheCore::flush() {
  {
    std::unique_lock<std::mutex> lock(m_queue_mutex);
    m_idle_cv.wait(lock, [&] { return m_queue.empty() && m_running == 0; });
  }
  refresh();
  flush_counters();
}

void CacheCore::flush_counters() {
  Stats pending;
  {
    std::lock_guard<std::mutex> lock(m_stats_mutex);
    std::swap(pending, m_unsaved);
  }
  // Also writes the uses recorded on hits (nothing at all when there is nothing to write).
  if (!m_user || !m_user->writable() || m_config.read_only)
    return;
  // Keyed like store()'s warning: a full or failing disk is one warning, not one per write.
  if (auto ok = m_user->add_counters(pending); !ok)
    log::write_once(LogLevel::warn, "put:" + m_user->name() + to_string(ok.error().code),
                    "could not save counters: " + ok.error().message);
}

void CacheCore::evict(const Key& key) {
  m_memory->remove(key.digest);
  for (auto& tier : m_persistent)
    if (!tier->dead && tier->store->writable())
      tier->store->remove(key.digest);
}

void CacheCore::count(const std::string& backend, const std::string& name, std::uint64_t amount) {
  std::lock_guard<std::mutex> lock(m_stats_mutex);
  m_session.add(backend, name, amount);
  m_unsaved.add(backend, name, amount);
}

void CacheCore::count_unsaved(const std::string& backend, const std::string& name,
                              std::uint64_t amount) {
  std::lock_guard<std::mutex> lock(m_stats_mutex);
  m_unsaved.add(backend, name, amount);
}

Stats CacheCore::session_stats() const {
  std::lock_guard<std::mutex> lock(m_stats_mutex);
  return m_session;
}

std::vector<std::shared_ptr<Store>> CacheCore::tiers() const {
  std::vector<std::shared_ptr<Store>> out{m_memory};
  for (const auto& tier : m_persistent)
    out.push_back(tier->store);
  return out;
}

} // namespace jitcache::detail
