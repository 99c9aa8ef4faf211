// The CUDA backend through the tables every backend passes alike (tests/support/backend_cases):
// counters after every call, and every user-tier operation failing in turn. NVRTC compiles for
// sm_80 without a GPU, so the cases run on every machine.
#include <jitcache/cuda.hpp>

#include "backends/cuda/cuda_key.hpp"
#include "tests/cuda/cuda_test_support.hpp"
#include "tests/support/backend_cases.hpp"

#include <gtest/gtest.h>

namespace jitcache {
namespace {

constexpr const char* k_arch = "sm_80";

class CudaCase : public test::BackendCase {
public:
  std::string backend() const override { return "cuda"; }
  bool loads() const override { return false; }
  Expected<BuildInfo> build(Cache& cache) override {
    auto binary = cuda::compile(cache, k_arch, m_program);
    if (!binary)
      return std::move(binary).error();
    if (test::cubin_sm(binary->cubin) != 80)
      return Error(ErrorCode::runtime_error, "not an sm_80 cubin");
    if (binary->cubin.find("saxpy") == std::string::npos)
      return Error(ErrorCode::runtime_error, "the cubin has no saxpy kernel");
    return binary->info;
  }
  Expected<BuildInfo> build_broken(Cache& cache) override {
    cuda::Program broken;
    broken.source = "extern \"C\" __global__ void k(float* x) { x[0] = undeclared; }\n";
    broken.name = "broken.cu";
    auto binary = cuda::compile(cache, k_arch, broken);
    if (!binary)
      return std::move(binary).error();
    return binary->info;
  }
  Expected<Key> key(const Config& config) override {
    return cuda::make_key(config, m_program, k_arch);
  }

  Expected<Key> key_by_another_compiler(const Config& config) override {
    const cuda::Toolchain other{"13.0", "1 bytes", {}};
    return cuda::make_key(other, *cuda::named_target(k_arch), config, m_program).first;
  }

private:
  const cuda::Program m_program = test::kernel_program("saxpy.cu");
};

TEST(CudaCases, CountersAfterEveryCall) {
  CudaCase backend;
  test::expect_counter_table(backend);
}

TEST(CudaCases, EveryUserTierFaultStillGivesTheKernelWithOneWarning) {
  test::expect_faults_contained([] { return std::make_unique<CudaCase>(); });
}

TEST(CudaCases, APackageMadeWithAnotherCompilerServesWithoutCompiling) {
  CudaCase backend;
  test::expect_packages_first(backend);
}

TEST(CudaCases, ARememberedKeyWhoseEntryWasEvictedIsCompiledAgain) {
  CudaCase backend;
  test::expect_remembered_key_evicted(backend);
}

} // namespace
} // namespace jitcache
