#include "core/tiers/user/eviction.hpp"

#include <algorithm>
#include <tuple>

namespace jitcache::detail {

std::vector<EvictionCandidate> choose_victims(std::vector<EvictionCandidate> candidates,
                                              std::uint64_t total, std::uint64_t target,
                                              const std::optional<Digest>& keep) {
  std::sort(candidates.begin(), candidates.end(),
            [](const EvictionCandidate& a, const EvictionCandidate& b) {
              return std::make_tuple(a.last_use, b.bytes, a.key) <
                     std::make_tuple(b.last_use, a.bytes, b.key);
            });
  std::vector<EvictionCandidate> victims;
  for (const EvictionCandidate& c : candidates) {
    if (total <= target)
      break;
    if (keep && c.key == *keep)
      continue;
    victims.push_back(c);
    total -= std::min(total, c.bytes);
  }
  return victims;
}

} // namespace jitcache::detail
