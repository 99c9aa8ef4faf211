#include "core/engine/handle_cache.hpp"

namespace jitcache::detail {

std::optional<HandleCache::Loaded> HandleCache::find(const Slot& slot) const {
  std::lock_guard<std::mutex> lock(m_mutex);
  auto it = m_slots.find(slot);
  if (it == m_slots.end())
    return std::nullopt;
  return it->second;
}

std::optional<HandleCache::Loaded> HandleCache::find(const RequestHash& request) const {
  std::lock_guard<std::mutex> lock(m_mutex);
  auto it = m_requests.find(request);
  if (it == m_requests.end())
    return std::nullopt;
  if (!m_proven.hold(it->second.guards)) {
    m_requests.erase(it); // a header changed: the caller rebuilds the key (and re-aliases)
    return std::nullopt;
  }
  return it->second.loaded;
}

void HandleCache::insert(const Slot& slot, const Loaded& loaded) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_slots.emplace(slot, loaded);
}

Expected<HandleCache::Loaded>
HandleCache::get_or_load(const Slot& slot, const std::function<Expected<Loaded>()>& load,
                         bool& ran) {
  ran = false;
  if (auto loaded = find(slot))
    return *loaded;
  auto result = m_loads.run(slot, [&]() -> Expected<Loaded> {
    if (auto loaded = find(slot)) // finished between our find and the flight
      return *loaded;
    auto loaded = load();
    ran = true;
    if (loaded)
      insert(slot, *loaded);
    return loaded;
  });
  return result.value;
}

void HandleCache::alias(const RequestHash& request, const Loaded& loaded,
                        std::optional<std::string> guards) {
  if (!guards)
    return;
  std::lock_guard<std::mutex> lock(m_mutex);
  m_requests.insert_or_assign(request, Alias{loaded, std::move(*guards)});
}

std::uint64_t HandleCache::stat_checks() const {
  return m_proven.stat_checks();
}

void HandleCache::clear() {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_requests.clear();
  m_slots.clear();
}

} // namespace jitcache::detail
