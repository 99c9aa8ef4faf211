#pragma once

#include <jitcache/store.hpp>

#include <cstdint>
#include <list>
#include <mutex>
#include <unordered_map>

namespace jitcache::detail {

/// Per-process byte-bounded LRU of entries. Never fails. An entry larger than the bound is not
/// kept. Thread-safe.
class MemoryStore final : public Store {
public:
  explicit MemoryStore(std::uint64_t max_bytes);

  std::string name() const override { return "memory"; }
  bool writable() const override { return true; }
  Expected<std::optional<Entry>> get(const Digest& key) override;
  Expected<void> put(const Digest& key, const Entry& entry) override;
  Expected<bool> remove(const Digest& key) override;
  Expected<void> for_each(const std::function<void(const Item&)>& fn) override;

  /// Bytes currently held (payload + metadata).
  std::uint64_t bytes() const;

private:
  using List = std::list<std::pair<Digest, Entry>>;
  static std::uint64_t cost(const Entry& e) { return e.payload.size() + e.metadata.size(); }
  void erase(List::iterator it);

  mutable std::mutex m_mutex;
  std::uint64_t m_max_bytes;
  std::uint64_t m_bytes = 0;
  List m_lru; ///< most recently used first
  std::unordered_map<Digest, List::iterator> m_index;
};

} // namespace jitcache::detail
