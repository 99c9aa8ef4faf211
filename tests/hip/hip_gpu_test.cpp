// Loading and running through hipModuleLoadData: these need an AMD GPU and skip without one.
#include "tests/hip/hip_test_support.hpp"

#include "backends/hip/hip_api.hpp"

#include <jitcache/version.hpp>

#include <map>
#include <vector>

namespace jitcache {
namespace {

class HipGpu : public ::testing::Test {
protected:
  void SetUp() override {
    auto count = hip::device_count();
    if (!count)
      GTEST_SKIP() << "no AMD GPU: " << count.error().message;
    m_api = *hip::runtime();
  }

  // y = a * x + y through `function` (saxpy's or axpy<float>'s signature), returned to the host.
  std::vector<float> run_axpy(hipFunction_t function, const std::vector<float>& x,
                              std::vector<float> y, float a) {
    const std::size_t bytes = x.size() * sizeof(float);
    void* dx = nullptr;
    void* dy = nullptr;
    EXPECT_EQ(m_api->hipMalloc(&dx, bytes), hipSuccess);
    EXPECT_EQ(m_api->hipMalloc(&dy, bytes), hipSuccess);
    EXPECT_EQ(m_api->hipMemcpyHtoD(dx, const_cast<float*>(x.data()), bytes), hipSuccess);
    EXPECT_EQ(m_api->hipMemcpyHtoD(dy, y.data(), bytes), hipSuccess);
    int n = static_cast<int>(x.size());
    void* args[] = {&n, &a, &dx, &dy};
    EXPECT_EQ(m_api->hipModuleLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr,
                                           args, nullptr),
              hipSuccess);
    EXPECT_EQ(m_api->hipDeviceSynchronize(), hipSuccess);
    EXPECT_EQ(m_api->hipMemcpyDtoH(y.data(), dy, bytes), hipSuccess);
    EXPECT_EQ(m_api->hipFree(dx), hipSuccess);
    EXPECT_EQ(m_api->hipFree(dy), hipSuccess);
    return y;
  }

  void expect_axpy_works(hipFunction_t function) {
    std::vector<float> x(1000), y(1000, 1.0f);
    for (int i = 0; i < 1000; ++i)
      x[i] = static_cast<float>(i);
    const auto out = run_axpy(function, x, y, 2.0f);
    for (int i = 0; i < 1000; ++i)
      ASSERT_EQ(out[i], 2.0f * i + 1.0f) << i;
  }

  const hip::RuntimeApi* m_api = nullptr;
};

TEST_F(HipGpu, MissThenMemoryHitThenUserHitAllRun) {
  test::FreshCache fresh;
  const hip::Program saxpy = test::hip_kernel("saxpy.hip");
  auto first = hip::load_module(*fresh.cache, saxpy);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->info.outcome, Outcome::miss);
  EXPECT_GT(first->info.load_ms, 0);
  auto target = hip::device_target(0);
  ASSERT_TRUE(target);
  EXPECT_EQ(first->info.device, *target);
  auto function = first->function("saxpy");
  ASSERT_TRUE(function) << function.error().message;
  expect_axpy_works(*function);

  auto again = hip::load_module(*fresh.cache, saxpy);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->info.tier, "memory");
  EXPECT_EQ(again->module, first->module);

  Cache& reopened = fresh.reopen();
  auto stored = hip::load_module(reopened, saxpy);
  ASSERT_TRUE(stored) << stored.error().message;
  EXPECT_EQ(stored->info.tier, "user");
  auto stored_function = stored->function("saxpy");
  ASSERT_TRUE(stored_function) << stored_function.error().message;
  expect_axpy_works(*stored_function);
}

TEST_F(HipGpu, NameExpressionsFindTemplatedKernels) {
  test::FreshCache fresh;
  hip::Program axpy = test::hip_kernel("axpy_template.hip");
  axpy.name_expressions = {"axpy<float>"};
  auto module = hip::load_module(*fresh.cache, axpy);
  ASSERT_TRUE(module) << module.error().message;
  EXPECT_EQ(module->lowered_names.count("axpy<float>"), 1u);
  auto function = module->function("axpy<float>");
  ASSERT_TRUE(function) << function.error().message;
  expect_axpy_works(*function);
  auto missing = module->function("no_such_kernel");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no_such_kernel"), std::string::npos);
}

TEST_F(HipGpu, AStoredCodeObjectForAnotherTargetIsRejectedAndReplaced) {
  test::FreshCache fresh;
  const hip::Program saxpy = test::hip_kernel("saxpy.hip");
  auto target = hip::device_target(0);
  ASSERT_TRUE(target);
  const std::string other = target->rfind("gfx906", 0) == 0 ? "gfx1030" : "gfx906";
  auto wrong = hip::compile(*fresh.cache, other, saxpy);
  ASSERT_TRUE(wrong) << wrong.error().message;
  auto key = hip::make_key(fresh.cache->config(), saxpy, *target);
  ASSERT_TRUE(key);
  Entry misfiled;
  misfiled.backend = "hip";
  misfiled.payload = wrong->code;
  fresh.cache->store(*key, misfiled);

  Cache& reopened = fresh.reopen();
  auto module = hip::load_module(reopened, saxpy);
  ASSERT_TRUE(module) << module.error().message;
  EXPECT_NE(module->info.note.find("rejected"), std::string::npos);
  EXPECT_EQ(reopened.session_stats().get("hip", Counter::rejected), 1u);
  auto function = module->function("saxpy");
  ASSERT_TRUE(function) << function.error().message;
  expect_axpy_works(*function);
}

TEST_F(HipGpu, TheTuningDeviceNamesTheGpuItsTargetAndToolchain) {
  auto device = hip::tuning_device();
  ASSERT_TRUE(device) << device.error().message;
  EXPECT_EQ(device->backend, "hip");
  EXPECT_FALSE(device->name.empty());
  auto target = hip::device_target(0);
  ASSERT_TRUE(target) << target.error().message;
  std::map<std::string, std::string> fields(device->identity.begin(), device->identity.end());
  EXPECT_EQ(fields["device_name"], device->name);
  EXPECT_EQ(fields["target"], *target);
  EXPECT_GT(std::stoi(fields["compute_units"]), 0);
  EXPECT_EQ(fields["jitcache_version"], k_version);
}

TEST_F(HipGpu, ADeviceOutOfRangeIsNoDevice) {
  auto target = hip::device_target(1'000);
  ASSERT_FALSE(target);
  EXPECT_EQ(target.error().code, ErrorCode::no_device);
}

} // namespace
} // namespace jitcache
