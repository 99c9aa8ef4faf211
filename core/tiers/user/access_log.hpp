#pragma once

#include <jitcache/digest.hpp>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace jitcache::detail {

/// When entries were last used, gathered in memory on hits and written in batches by the next
/// write transaction, so that a hit never costs a write (LRU eviction reads them). Thread-safe.
class AccessLog {
public:
  using Batch = std::vector<std::pair<Digest, std::uint64_t>>;

  /// Microseconds since the epoch: the unit of every recorded time (comparable across
  /// processes).
  static std::uint64_t now_us();

  /// Remembers that `key` was used at `when_us` (later times replace earlier ones).
  void record(const Digest& key, std::uint64_t when_us);

  /// Takes every time recorded so far, leaving the log empty.
  Batch take();

  /// Puts back a batch whose write failed (times recorded meanwhile win).
  void restore(const Batch& batch);

  /// Whether nothing is recorded.
  bool empty() const;

  /// Whether a batch should be written now rather than with the next write: many keys
  /// waiting, or the oldest waiting for long (a process that only ever hits).
  bool due() const;

private:
  static constexpr std::size_t k_max_keys = 4096;
  static constexpr std::chrono::seconds k_max_age{30};

  mutable std::mutex m_mutex;
  std::unordered_map<Digest, std::uint64_t> m_times;
  std::chrono::steady_clock::time_point m_oldest;
};

} // namespace jitcache::detail
