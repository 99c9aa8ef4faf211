// The lowered-name metadata stored with each entry.
#include "backends/hip/hip_metadata.hpp"

#include <gtest/gtest.h>

#include <map>

namespace jitcache {
namespace {

TEST(HipMetadata, LoweredNamesRoundTripWhateverTheyContain) {
  const std::map<std::string, std::string> names = {
      {"axpy<float>", "_Z4axpyIfEviT_PKS0_PS0_"}, {"a:b<1>", "12:x"}, {"", ""}};
  auto decoded = hip::decode_lowered_names(hip::encode_lowered_names(names));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, names);
  EXPECT_TRUE(hip::decode_lowered_names("")->empty());
  for (const char* bad : {"3:ab", "x:1", "2:ab", "2:ab9:", ":"}) {
    auto garbage = hip::decode_lowered_names(bad);
    ASSERT_FALSE(garbage) << bad;
    EXPECT_EQ(garbage.error().code, ErrorCode::corrupt);
  }
}

} // namespace
} // namespace jitcache
