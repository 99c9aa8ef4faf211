// Target selection from a compute capability or an arch name, against NVRTC's list of targets.
#include "backends/cuda/cuda_identity.hpp"

#include <gtest/gtest.h>

namespace jitcache::cuda {
namespace {

const Toolchain k_nvrtc{"13.0", "libnvrtc.so.13, 1 bytes", {75, 80, 86, 89, 90, 100, 120, 121}};

TEST(CudaTarget, AKnownDeviceGetsItsExactArchitecture) {
  auto target = device_target(k_nvrtc, 8, 6);
  ASSERT_TRUE(target);
  EXPECT_EQ(target->arch, "sm_86");
  EXPECT_EQ(target->compute_capability, "8.6");
  EXPECT_FALSE(target->ptx);
}

TEST(CudaTarget, ADeviceNewerThanNvrtcGetsPtxForItsNewestArchitecture) {
  auto target = device_target(k_nvrtc, 13, 0);
  ASSERT_TRUE(target);
  EXPECT_EQ(target->arch, "compute_121");
  EXPECT_EQ(target->compute_capability, "13.0");
  EXPECT_TRUE(target->ptx);
}

TEST(CudaTarget, ADeviceOlderThanNvrtcIsUnsupported) {
  auto target = device_target(k_nvrtc, 7, 0);
  ASSERT_FALSE(target);
  EXPECT_EQ(target.error().code, ErrorCode::unsupported);
  EXPECT_NE(target.error().message.find("sm_75, sm_80"), std::string::npos);
}

TEST(CudaTarget, ArchNames) {
  auto plain = arch_target(k_nvrtc, "sm_90");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->compute_capability, "9.0");
  auto specific = arch_target(k_nvrtc, "sm_90a");
  ASSERT_TRUE(specific);
  EXPECT_EQ(specific->arch, "sm_90a");
  EXPECT_EQ(specific->compute_capability, "9.0");
  EXPECT_EQ(arch_target(k_nvrtc, "sm_120")->compute_capability, "12.0");
  EXPECT_EQ(arch_target(k_nvrtc, "sm_70").error().code, ErrorCode::unsupported);
  for (const char* bad : {"", "sm_", "sm_8", "sm_80x", "compute_80", "gfx90a", "sm_-80"})
    EXPECT_EQ(arch_target(k_nvrtc, bad).error().code, ErrorCode::invalid_argument) << bad;
}

TEST(CudaTarget, ADeviceAndItsArchitectureShareAKey) {
  // An offline precompile for sm_80 must be a hit for a device of compute capability 8.0.
  Program program;
  program.source = "extern \"C\" __global__ void k() {}";
  const Key from_device = make_key(k_nvrtc, *device_target(k_nvrtc, 8, 0), Config(), program).first;
  const Key from_arch = make_key(k_nvrtc, *arch_target(k_nvrtc, "sm_80"), Config(), program).first;
  EXPECT_EQ(from_device.digest, from_arch.digest);
}

} // namespace
} // namespace jitcache::cuda
