#include "core/tiers/user/access_log.hpp"

#include "core/support/clock.hpp"

#include <algorithm>

namespace jitcache::detail {

std::uint64_t AccessLog::now_us() {
  return static_cast<std::uint64_t>(detail::clock().wall_ns() / 1000);
}

void AccessLog::record(const Digest& key, std::uint64_t when_us) {
  std::lock_guard<std::mutex> lock(m_mutex);
  if (m_times.empty())
    m_oldest = detail::clock().steady();
  auto& slot = m_times[key];
  slot = std::max(slot, when_us);
}

AccessLog::Batch AccessLog::take() {
  std::lock_guard<std::mutex> lock(m_mutex);
  Batch batch(m_times.begin(), m_times.end());
  m_times.clear();
  return batch;
}

void AccessLog::restore(const Batch& batch) {
  for (const auto& [key, when] : batch)
    record(key, when);
}

bool AccessLog::empty() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_times.empty();
}

bool AccessLog::due() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return !m_times.empty() &&
         (m_times.size() >= k_max_keys || detail::clock().steady() - m_oldest >= k_max_age);
}

} // namespace jitcache::detail
