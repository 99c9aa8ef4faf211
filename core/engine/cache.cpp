#include <jitcache/cache.hpp>

#include "core/engine/cache_core.hpp"
#include "core/support/clock.hpp"
#include "core/tiers/entry_codec.hpp"

namespace jitcache {

using detail::Stopwatch;
using detail::to_entry;

const char* to_string(Outcome outcome) noexcept {
  return outcome == Outcome::hit ? "hit" : "miss";
}

Cache::Cache() : Cache(Config::from_environment()) {}
Cache::Cache(Config config)
    : m_core(std::make_unique<detail::CacheCore>(std::move(config), std::nullopt)) {}
Cache::Cache(Config config, std::vector<std::shared_ptr<Store>> stores)
    : Cache(std::move(config), detail::TierSet::of_stores(std::move(stores))) {}
Cache::Cache(Config config, detail::TierSet tiers)
    : m_core(std::make_unique<detail::CacheCore>(std::move(config), std::move(tiers))) {}
Cache::~Cache() = default;

const Config& Cache::config() const {
  return m_core->config();
}

Expected<Found> Cache::get_or_compile(const Key& key,
                                      const std::function<Expected<Entry>()>& compile,
                                      BuildInfo* info) {
  const Stopwatch total;
  BuildInfo local;
  BuildInfo& out = info ? *info : local;
  Found found;
  auto got = m_core->obtain(
      key,
      [&]() -> Expected<detail::Compiled> {
        auto entry = compile();
        if (!entry)
          return std::move(entry).error();
        return detail::Compiled{std::move(*entry), {}, {}, {}};
      },
      [&](const EntryView& entry) -> Expected<void> {
        found.entry = to_entry(entry);
        return {};
      },
      out);
  out.total_ms = total.ms();
  if (!got)
    return std::move(got).error();
  found.tier = out.tier;
  return found;
}

std::optional<Found> Cache::lookup(const Key& key) {
  return m_core->lookup(key);
}
void Cache::store(const Key& key, const Entry& entry) {
  m_core->store(key, entry);
}
void Cache::store_later(const Key& key, std::function<Expected<Entry>()> produce,
                        std::function<Expected<Entry>()> refresh) {
  m_core->store_later(key, std::move(produce), std::move(refresh));
}
void Cache::flush() {
  m_core->flush();
}

Expected<void> Cache::wait_for_stores(std::chrono::milliseconds limit) {
  return m_core->wait_for_stores(limit);
}
void Cache::evict(const Key& key) {
  m_core->evict(key);
}
Stats Cache::session_stats() const {
  return m_core->session_stats();
}
std::vector<std::shared_ptr<Store>> Cache::tiers() const {
  return m_core->tiers();
}
bool Cache::persistent(const std::string& backend) const {
  return m_core->persistent(backend);
}

namespace detail {
CacheCore& core_of(Cache& cache) {
  return *cache.m_core;
}
} // namespace detail

} // namespace jitcache
