#include "core/tiers/user/access_log.hpp"

#include "core/support/clock.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

namespace jitcache::detail {

namespace {

constexpr std::size_t k_old_size = sizeof(std::uint64_t);
constexpr std::size_t k_counted = sizeof(std::uint64_t) + 2 * sizeof(std::uint32_t);

// The check of a counted use: the key too, so that a value found under another key is damage.
std::uint32_t check_of(const Digest& key, const char* counted) {
  char bytes[sizeof key.bytes + k_counted - sizeof(std::uint32_t)];
  std::memcpy(bytes, key.bytes.data(), sizeof key.bytes);
  std::memcpy(bytes + sizeof key.bytes, counted, k_counted - sizeof(std::uint32_t));
  return static_cast<std::uint32_t>(XXH3_64bits(bytes, sizeof bytes));
}

} // namespace

std::string encode_use(const Digest& key, std::uint64_t last_use_us, std::uint32_t hits) {
  std::string out(k_counted, '\0');
  std::memcpy(out.data(), &last_use_us, sizeof last_use_us);
  std::memcpy(out.data() + sizeof last_use_us, &hits, sizeof hits);
  const std::uint32_t check = check_of(key, out.data());
  std::memcpy(out.data() + sizeof last_use_us + sizeof hits, &check, sizeof check);
  return out;
}

EntryUse decode_use(const Digest& key, std::string_view bytes) {
  EntryUse use;
  std::uint64_t when = 0;
  if (bytes.size() == k_old_size) {
    std::memcpy(&when, bytes.data(), sizeof when);
    use.last_use_us = when;
  } else if (bytes.size() == k_counted) {
    std::uint32_t hits = 0, check = 0;
    std::memcpy(&check, bytes.data() + sizeof when + sizeof hits, sizeof check);
    if (check != check_of(key, bytes.data()))
      return use;
    std::memcpy(&when, bytes.data(), sizeof when);
    std::memcpy(&hits, bytes.data() + sizeof when, sizeof hits);
    use.last_use_us = when;
    use.hits = hits;
  }
  return use;
}

std::uint64_t AccessLog::now_us() {
  return static_cast<std::uint64_t>(detail::clock().wall_ns() / 1000);
}

void AccessLog::add(const Digest& key, const Use& use) {
  if (m_uses.empty())
    m_oldest = detail::clock().steady();
  auto& slot = m_uses[key];
  slot.when_us = std::max(slot.when_us, use.when_us);
  slot.hits += use.hits;
}

void AccessLog::record(const Digest& key, std::uint64_t when_us) {
  std::lock_guard<std::mutex> lock(m_mutex);
  add(key, Use{when_us, 1});
}

AccessLog::Batch AccessLog::take() {
  std::lock_guard<std::mutex> lock(m_mutex);
  Batch batch(m_uses.begin(), m_uses.end());
  m_uses.clear();
  return batch;
}

void AccessLog::restore(const Batch& batch) {
  std::lock_guard<std::mutex> lock(m_mutex);
  for (const auto& [key, use] : batch)
    add(key, use);
}

bool AccessLog::empty() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_uses.empty();
}

bool AccessLog::due() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return !m_uses.empty() &&
         (m_uses.size() >= k_max_keys || detail::clock().steady() - m_oldest >= k_max_age);
}

} // namespace jitcache::detail
