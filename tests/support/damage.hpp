#pragma once
// One random damage of some bytes, for the tests that try damaged bytes anywhere in a file
// jitcache reads: every fourth trial cuts the bytes short, the others change one byte.

#include <random>
#include <string>
#include <string_view>

namespace jitcache::test {

/// `good` (not empty) damaged for trial number `trial`: cut at a random length (trial % 4 == 3),
/// else one byte at a random place changed to another value.
inline std::string damaged(std::string_view good, std::mt19937& rng, int trial) {
  std::string bad(good);
  if (trial % 4 == 3) {
    bad.resize(rng() % good.size());
  } else {
    const std::size_t at = rng() % bad.size();
    bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
  }
  return bad;
}

} // namespace jitcache::test
