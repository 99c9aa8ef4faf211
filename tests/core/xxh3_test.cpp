#include "core/support/xxh3.hpp"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace jitcache {
namespace {

using detail::k_worth_dispatching;

std::string random_bytes(std::mt19937_64& random, std::size_t size) {
  std::string bytes(size, '\0');
  for (char& c : bytes)
    c = static_cast<char>(random());
  return bytes;
}

// Small buffers first (the default code, unless other tests hashed enough before), then one of
// the threshold's size (the dispatching code from then on), then others: every hash is the
// library's default XXH3 of the same bytes.
TEST(Xxh3Test, EitherCodeHashesAsTheLibrarysDefaultDoes) {
  std::mt19937_64 random(7);
  std::vector<std::size_t> sizes = {0, 1, 3, 16, 17, 128, 129, 240, 241, 1024, 4096, 65537};
  sizes.push_back(k_worth_dispatching);
  for (int trial = 0; trial < 100; ++trial)
    sizes.push_back(random() % (2 * k_worth_dispatching));
  for (std::size_t size : sizes) {
    const std::string bytes = random_bytes(random, size);
    EXPECT_EQ(detail::xxh3_64(bytes.data(), bytes.size()), XXH3_64bits(bytes.data(), bytes.size()))
        << size << " bytes";
  }
}

// A state fed pieces on both sides of the threshold, in random orders, ends where the library's
// one-shot 128-bit hash of the whole does.
TEST(Xxh3Test, AStateFedByEitherCodeEndsAsOneShot) {
  std::mt19937_64 random(11);
  for (int trial = 0; trial < 20; ++trial) {
    std::string whole;
    XXH3_state_t state;
    XXH3_128bits_reset(&state);
    for (int piece = 0; piece < 6; ++piece) {
      const std::size_t size =
          random() % 2 ? random() % 300 : k_worth_dispatching + random() % 5000;
      const std::string bytes = random_bytes(random, size);
      detail::xxh3_128_update(&state, bytes.data(), bytes.size());
      whole += bytes;
    }
    const XXH128_hash_t streamed = XXH3_128bits_digest(&state);
    const XXH128_hash_t once = XXH3_128bits(whole.data(), whole.size());
    EXPECT_EQ(streamed.low64, once.low64) << "trial " << trial;
    EXPECT_EQ(streamed.high64, once.high64) << "trial " << trial;
  }
}

} // namespace
} // namespace jitcache
