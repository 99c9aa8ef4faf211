// The metadata stored with CUDA entries: lowered names survive any bytes; damage is detected.
#include "backends/cuda/cuda_metadata.hpp"

#include <gtest/gtest.h>

namespace jitcache::cuda {
namespace {

TEST(CudaMetadata, RoundTrips) {
  Metadata metadata{"cubin", "sm_90a", {}};
  metadata.lowered_names["scale<float, 4>"] = "_Z5scaleIfLi4EEvPT_S0_i";
  metadata.lowered_names[std::string("odd\nname 3:x\0", 13)] = "lowered with spaces";
  auto decoded = decode_metadata(encode_metadata(metadata));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->format, "cubin");
  EXPECT_EQ(decoded->target, "sm_90a");
  EXPECT_EQ(decoded->lowered_names, metadata.lowered_names);
}

TEST(CudaMetadata, WithoutNames) {
  auto decoded = decode_metadata(encode_metadata({"ptx", "compute_121", {}}));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->format, "ptx");
  EXPECT_TRUE(decoded->lowered_names.empty());
}

TEST(CudaMetadata, DamageIsDetected) {
  Metadata metadata{"cubin", "sm_80", {{"f<int>", "_Z1fIiEvv"}}};
  const std::string text = encode_metadata(metadata);
  EXPECT_FALSE(decode_metadata(""));
  EXPECT_FALSE(decode_metadata("garbage"));
  EXPECT_FALSE(decode_metadata(text.substr(0, text.size() - 1)));          // truncated
  EXPECT_FALSE(decode_metadata(text + "x"));                               // trailing bytes
  EXPECT_FALSE(decode_metadata(encode_metadata({"fatbin", "sm_80", {}}))); // unknown format
  std::string wrong_length = text;
  wrong_length.replace(wrong_length.find("6:f<int>"), 1, "9");
  EXPECT_FALSE(decode_metadata(wrong_length));
}

} // namespace
} // namespace jitcache::cuda
