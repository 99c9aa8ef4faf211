#pragma once

#include <jitcache/digest.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace jitcache {

/// One stored entry as eviction sees it.
struct EvictionCandidate {
  Digest key;
  std::uint64_t bytes = 0;    ///< stored size
  std::uint64_t last_use = 0; ///< AccessLog::now_us() of its last recorded use; 0 = unknown
};

/// The entries to remove so that `total` (the stored size of all candidates) falls to `target`
/// or below: least recently used first (ties: larger first, then key order, so that the choice
/// is deterministic). `keep` (the entry being stored) is never chosen. Returns every other
/// candidate when even that is not enough. Pure function.
std::vector<EvictionCandidate> choose_victims(std::vector<EvictionCandidate> candidates,
                                              std::uint64_t total, std::uint64_t target,
                                              const std::optional<Digest>& keep);

/// Where automatic eviction stops once the limit is passed: 90% of it, so that one pass makes
/// room for many stores instead of scanning the tier on every one.
inline std::uint64_t eviction_target(std::uint64_t limit) {
  return limit - limit / 10;
}

} // namespace jitcache
