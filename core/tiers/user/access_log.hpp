#pragma once

#include <jitcache/digest.hpp>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jitcache::detail {

/// What the user tier knows of an entry's use: when it was last used and how often it was hit.
struct EntryUse {
  std::optional<std::uint64_t> last_use_us; ///< AccessLog::now_us(); empty: not known
  /// Hits since the entry was stored (or since a jitcache that counts them first hit it); empty:
  /// not counted (kept by a jitcache from before hits were counted) or damaged.
  std::optional<std::uint32_t> hits;
};

/// The stored form of an entry's use (the value of the user tier's "access" database, under the
/// entry's key), in the native byte order like every value LMDB keeps there:
///
///   8 bytes    u64 last use                          (before hits were counted: hits unknown)
///   16 bytes   u64 last use, u32 hits, u32 check     check: the low half of XXH3-64 over the
///                                                     key and the 12 bytes before it
///
/// A check that does not match, or any other size, is damage: nothing is known (a damaged
/// count reads as unknown, never as a number it did not have).
std::string encode_use(const Digest& key, std::uint64_t last_use_us, std::uint32_t hits);
/// Reads encode_use()'s bytes (or the older 8-byte form) stored under `key`.
EntryUse decode_use(const Digest& key, std::string_view bytes);

/// When entries were last used and how often they were hit, gathered in memory on hits and
/// written in batches by the next write transaction, so that a hit never costs a write (LRU
/// eviction reads the times; `jitcache list` shows both). Thread-safe.
class AccessLog {
public:
  /// What was recorded of one entry since the last batch.
  struct Use {
    std::uint64_t when_us = 0; ///< the latest use
    std::uint64_t hits = 0;    ///< how many
  };
  using Batch = std::vector<std::pair<Digest, Use>>;

  /// Microseconds since the epoch: the unit of every recorded time (comparable across
  /// processes).
  static std::uint64_t now_us();

  /// Remembers that `key` was hit at `when_us` (later times replace earlier ones; hits add up).
  void record(const Digest& key, std::uint64_t when_us);

  /// Takes every use recorded so far, leaving the log empty.
  Batch take();

  /// Puts back a batch whose write failed (times recorded meanwhile win; hits add up).
  void restore(const Batch& batch);

  /// Whether nothing is recorded.
  bool empty() const;

  /// Whether a batch should be written now rather than with the next write: many keys
  /// waiting, or the oldest waiting for long (a process that only ever hits).
  bool due() const;

private:
  void add(const Digest& key, const Use& use); // with m_mutex held

  static constexpr std::size_t k_max_keys = 4096;
  static constexpr std::chrono::seconds k_max_age{30};

  mutable std::mutex m_mutex;
  std::unordered_map<Digest, Use> m_uses;
  std::chrono::steady_clock::time_point m_oldest;
};

} // namespace jitcache::detail
