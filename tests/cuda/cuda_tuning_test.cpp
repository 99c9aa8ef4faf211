// The tuning database on CUDA (examples/cuda_matmul, kernels/matmul_tuned.cu): the device
// identity, a problem tuned on the GPU with a candidate refused, the choice computing the right
// product, and the next Cache finding the record and the candidates' modules without compiling.
// The GPU tests are skipped where there is no driver or no GPU.
#include "examples/cuda_matmul.hpp"
#include "tests/cuda/cuda_test_support.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

namespace jitcache {
namespace {

using test::TempDir;

std::string identity_value(const tuning::Device& device, const std::string& name) {
  for (const auto& [field, value] : device.identity)
    if (field == name)
      return value;
  return {};
}

TEST(CudaTuningDevice, WithoutACurrentContextIsAnErrorNotACrash) {
  Expected<tuning::Device> device = Error();
  std::thread([&] { device = cuda::tuning_device(); }).join(); // no context is current there
  ASSERT_FALSE(device);
  if (cuda::driver())
    EXPECT_EQ(device.error().code, ErrorCode::invalid_argument) << device.error().message;
  else
    EXPECT_TRUE(device.error().code == ErrorCode::runtime_missing ||
                device.error().code == ErrorCode::no_device)
        << device.error().message;
}

TEST(CudaTuning, TunedOnTheGpuRightAndFoundByTheNextCacheWithoutCompiling) {
  test::GpuContext gpu;
  if (!gpu.driver)
    GTEST_SKIP() << "no CUDA driver or GPU";
  TempDir dir;
  const Config config = Config::from_variables({{"JITCACHE_DIR", dir.path().string()}});
  const std::string source = test::read_kernel("matmul_tuned.cu");
  const std::string name = std::string(JITCACHE_KERNELS) + "/matmul_tuned.cu";
  const tuning::Family family = examples::cuda_matmul_family();
  auto device = cuda::tuning_device();
  ASSERT_TRUE(device) << device.error().message;
  EXPECT_EQ(device->backend, "cuda");
  EXPECT_FALSE(device->name.empty());
  EXPECT_EQ(identity_value(*device, "device_name"), device->name);
  EXPECT_FALSE(identity_value(*device, "nvrtc_version").empty());
  EXPECT_NE(std::stoi(identity_value(*device, "compute_capability")), 0);

  const std::vector<tuning::Parameters> candidates = {
      {{"TILE", "32"}, {"WPT", "4"}},
      {{"TILE", "8"}, {"WPT", "1"}},
      {{"TILE", "3"}, {"WPT", "1"}}, // does not divide 128: refused, skipped
      {{"TILE", "64"}, {"WPT", "8"}}};
  constexpr int n = 128;
  {
    Cache cache(config);
    examples::CudaMatmulProblem problem(cache, n, n, n, source, name);
    auto tuned =
        tuning::tune(cache, family, problem.problem(), *device, problem.trials(candidates));
    ASSERT_TRUE(tuned) << tuned.error().message;
    EXPECT_EQ(tuned->origin, tuning::Origin::user);
    ASSERT_TRUE(tuned->record);
    EXPECT_EQ(tuned->record->candidates, 4u); // the default and three that run
    EXPECT_EQ(tuned->record->skipped, 1u);
    EXPECT_GT(tuned->record->default_ms, 0);
    EXPECT_LE(tuned->record->best_ms, tuned->record->default_ms);
    EXPECT_EQ(cache.session_stats().get("cuda", Counter::compiles), 4u);

    auto c = problem.compute(tuned->parameters);
    ASSERT_TRUE(c) << c.error().message;
    const auto [a, b] = examples::matmul_inputs(n, n, n);
    for (int i = 0; i < n; i += 7)
      for (int j = 0; j < n; j += 5) {
        double expected = 0;
        for (int k = 0; k < n; ++k)
          expected += double(a[i * n + k]) * b[k * n + j];
        ASSERT_NEAR((*c)[i * n + j], expected, 1e-3) << i << "," << j;
      }
  }
  Cache next(config);
  const tuning::Choice found =
      tuning::lookup(next, family, examples::matmul_problem(n, n, n), *device);
  EXPECT_EQ(found.origin, tuning::Origin::user);
  // Another size with the same candidates: their modules are user-tier hits.
  examples::CudaMatmulProblem other(next, 256, 256, 256, source, name);
  auto tuned = tuning::tune(next, family, other.problem(), *device, other.trials(candidates));
  ASSERT_TRUE(tuned) << tuned.error().message;
  EXPECT_EQ(next.session_stats().get("cuda", Counter::compiles), 0u);
  EXPECT_EQ(next.session_stats().hits("cuda"), 4u);
}

} // namespace
} // namespace jitcache
