#pragma once
// How many trials a randomized test of hostile or random input makes, and from which seed: the
// sanitized trees bound the trials (ci/sanitize.sh sets JITCACHE_HOSTILE_TRIALS), and
// JITCACHE_HOSTILE_SEED replays a failure's seed.

#include <cstdint>
#include <cstdlib>

namespace jitcache::test {

/// JITCACHE_HOSTILE_TRIALS when it is set to a positive number, else `normal`.
inline int hostile_trials(int normal) {
  const char* set = std::getenv("JITCACHE_HOSTILE_TRIALS");
  return set && std::atoi(set) > 0 ? std::atoi(set) : normal;
}

/// JITCACHE_HOSTILE_SEED when it is set, else `normal`.
inline std::uint64_t hostile_seed(std::uint64_t normal) {
  const char* set = std::getenv("JITCACHE_HOSTILE_SEED");
  return set ? std::strtoull(set, nullptr, 10) : normal;
}

} // namespace jitcache::test
