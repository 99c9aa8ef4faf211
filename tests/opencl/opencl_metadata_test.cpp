// The metadata stored with OpenCL entries: names and the build log survive any bytes; what an
// older jitcache wrote (no log) still reads; damage is detected.
#include "backends/opencl/opencl_metadata.hpp"

#include <gtest/gtest.h>

#include <random>

namespace jitcache::opencl {
namespace {

TEST(OpenclMetadata, RoundTripsAnyBytes) {
  Metadata metadata;
  metadata.source = "kernels/odd name\n3:x.cl";
  metadata.kernels = {"add", std::string("odd\nkernel 3:x\0", 15)};
  metadata.log = std::string("warning: line 1\nkernel 4:fake\n\0", 31);
  auto decoded = decode_metadata(encode_metadata(metadata));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->source, metadata.source);
  EXPECT_EQ(decoded->kernels, metadata.kernels);
  EXPECT_EQ(decoded->log, metadata.log);
}

TEST(OpenclMetadata, WhatAnOlderJitcacheWroteReadsWithoutALog) {
  auto decoded = decode_metadata("jitcache-opencl-metadata 1\nsource 4:a.cl\nkernel 3:add\n");
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->source, "a.cl");
  EXPECT_EQ(decoded->kernels, std::vector<std::string>{"add"});
  EXPECT_TRUE(decoded->log.empty());
}

TEST(OpenclMetadata, DamageIsDetected) {
  const std::string text = encode_metadata({"a.cl", {"add", "scale"}, "warning: x\n"});
  EXPECT_FALSE(decode_metadata(""));
  EXPECT_FALSE(decode_metadata("garbage"));
  EXPECT_FALSE(decode_metadata(text + "x")); // trailing bytes
  std::string wrong_length = text;
  wrong_length.replace(wrong_length.find("11:warning"), 2, "19");
  EXPECT_FALSE(decode_metadata(wrong_length));
  // Every truncation is refused, save the ones that end between two kernels.
  for (std::size_t size = 0; size < text.size(); ++size) {
    auto decoded = decode_metadata(text.substr(0, size));
    if (decoded) {
      EXPECT_EQ(text[size - 1], '\n') << size;
    }
  }
}

TEST(OpenclMetadata, RandomDamageNeverCrashesAndWhatDecodesEncodesBack) {
  const std::string text = encode_metadata({"a.cl", {"add", "scale"}, "warning: x\n"});
  const unsigned seed = std::random_device{}();
  std::mt19937 random(seed);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string damaged = text;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i)
      damaged[random() % damaged.size()] = static_cast<char>(random());
    if (auto decoded = decode_metadata(damaged)) {
      EXPECT_EQ(encode_metadata(*decoded), damaged) << "seed " << seed << " trial " << trial;
    }
  }
}

} // namespace
} // namespace jitcache::opencl
