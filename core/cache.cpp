#include <jitcache/cache.hpp>

#include "core/cache_core.hpp"
#include "core/clock.hpp"

namespace jitcache {

const char* to_string(Outcome outcome) noexcept { return outcome == Outcome::hit ? "hit" : "miss"; }

Cache::Cache() : Cache(Config::from_environment()) {}
Cache::Cache(Config config)
    : m_core(std::make_unique<detail::CacheCore>(std::move(config), std::nullopt)) {}
Cache::Cache(Config config, std::vector<std::shared_ptr<Store>> stores)
    : m_core(std::make_unique<detail::CacheCore>(std::move(config), std::move(stores))) {}
Cache::~Cache() = default;

const Config& Cache::config() const { return m_core->config(); }
detail::CacheCore& Cache::core() { return *m_core; }

Expected<Found> Cache::get_or_compile(const Key& key,
                                      const std::function<Expected<Entry>()>& compile,
                                      BuildInfo* info) {
  Stopwatch total;
  BuildInfo local;
  BuildInfo& out = info ? *info : local;
  out.key = key.digest;

  const auto hit = [&](Found found) -> Expected<Found> {
    m_core->count_hit(key, found.tier, found.entry.compile_ns, found.entry.payload.size(), out);
    out.total_ms = total.ms();
    return found;
  };
  if (auto found = m_core->lookup(key))
    return hit(std::move(*found));

  bool compiled = false;
  auto flight = m_core->compiles().run(key.digest, [&]() -> Expected<Found> {
    // Another thread may have finished the same key between our lookup and now, or another
    // process may be compiling it: claim() waits for that one and answers from the tiers.
    auto claim = m_core->claim(key);
    if (claim.found)
      return std::move(*claim.found);
    Stopwatch clock;
    auto entry = compile();
    if (!entry) {
      count(key.backend, counter::compile_errors, 1);
      return std::move(entry).error();
    }
    entry->compile_ns = clock.ns();
    entry->backend = key.backend;
    compiled = true;
    m_core->store(key, *entry, m_core->compiled(key, std::move(claim.lease)).get());
    return Found{std::move(*entry), "compile"};
  });
  if (!flight.value)
    return flight.value;
  if (!compiled) { // a waiter (served from the leader's result), or stored meanwhile
    Found found = std::move(flight.value.value());
    if (!flight.leader)
      found.tier = "memory";
    return hit(std::move(found));
  }
  count(key.backend, counter::misses, 1);
  out.outcome = Outcome::miss;
  out.tier = "compile";
  out.compile_ms = flight.value->entry.compile_ns / 1e6;
  out.bytes = flight.value->entry.payload.size();
  out.total_ms = total.ms();
  return flight.value;
}

std::optional<Found> Cache::lookup(const Key& key) { return m_core->lookup(key); }
void Cache::store(const Key& key, const Entry& entry) { m_core->store(key, entry); }
void Cache::store_later(const Key& key, std::function<Expected<Entry>()> produce,
                        std::function<Expected<Entry>()> refresh) {
  m_core->store_later(key, std::move(produce), std::move(refresh));
}
void Cache::flush() { m_core->flush(); }
void Cache::evict(const Key& key) { m_core->evict(key); }
void Cache::count(const std::string& backend, const std::string& counter, std::uint64_t amount) {
  m_core->count(backend, counter, amount);
}
Stats Cache::session_stats() const { return m_core->session_stats(); }
std::vector<std::shared_ptr<Store>> Cache::tiers() const { return m_core->tiers(); }
bool Cache::persistent(const std::string& backend) const { return m_core->persistent(backend); }

} // namespace jitcache
