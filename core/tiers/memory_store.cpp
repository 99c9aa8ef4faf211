#include "core/tiers/memory_store.hpp"

namespace jitcache::detail {

MemoryStore::MemoryStore(std::uint64_t max_bytes) : m_max_bytes(max_bytes) {}

Expected<std::optional<Entry>> MemoryStore::get(const Digest& key) {
  std::lock_guard<std::mutex> lock(m_mutex);
  auto it = m_index.find(key);
  if (it == m_index.end())
    return std::optional<Entry>();
  m_lru.splice(m_lru.begin(), m_lru, it->second);
  return std::optional<Entry>(it->second->second);
}

Expected<void> MemoryStore::put(const Digest& key, const Entry& entry) {
  std::lock_guard<std::mutex> lock(m_mutex);
  if (auto it = m_index.find(key); it != m_index.end())
    erase(it->second);
  if (cost(entry) > m_max_bytes)
    return {};
  m_lru.emplace_front(key, entry);
  m_index.emplace(key, m_lru.begin());
  m_bytes += cost(entry);
  while (m_bytes > m_max_bytes)
    erase(std::prev(m_lru.end()));
  return {};
}

Expected<bool> MemoryStore::remove(const Digest& key) {
  std::lock_guard<std::mutex> lock(m_mutex);
  auto it = m_index.find(key);
  if (it == m_index.end())
    return false;
  erase(it->second);
  return true;
}

Expected<void> MemoryStore::for_each(const std::function<void(const Item&)>& fn) {
  std::lock_guard<std::mutex> lock(m_mutex);
  for (const auto& [key, entry] : m_lru)
    fn(Item{key, entry.backend, cost(entry), true});
  return {};
}

std::uint64_t MemoryStore::bytes() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_bytes;
}

void MemoryStore::erase(List::iterator it) {
  m_bytes -= cost(it->second);
  m_index.erase(it->first);
  m_lru.erase(it);
}

} // namespace jitcache::detail
