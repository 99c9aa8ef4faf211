// The HIP backend through the tables every backend passes alike (tests/support/backend_cases):
// counters after every call, and every user-tier operation failing in turn. hipRTC compiles for
// gfx90a without a GPU, so the cases run on every machine.
#include <jitcache/hip.hpp>

#include "backends/hip/hip_key.hpp"
#include "backends/hip/hip_targets.hpp"
#include "tests/hip/hip_test_support.hpp"
#include "tests/support/backend_cases.hpp"

#include <gtest/gtest.h>

namespace jitcache {
namespace {

constexpr const char* k_target = "gfx90a";

class HipCase : public test::BackendCase {
public:
  std::string backend() const override { return "hip"; }
  bool loads() const override { return false; }
  Expected<BuildInfo> build(Cache& cache) override {
    auto code = hip::compile(cache, k_target, m_program);
    if (!code)
      return std::move(code).error();
    if (code->code.compare(0, 4, "\177ELF") != 0 || code->target.rfind(k_target, 0) != 0)
      return Error(ErrorCode::runtime_error, "not a gfx90a code object");
    if (code->code.find("saxpy") == std::string::npos)
      return Error(ErrorCode::runtime_error, "the code object has no saxpy kernel");
    return code->info;
  }
  Expected<BuildInfo> build_broken(Cache& cache) override {
    hip::Program broken;
    broken.name = "broken.hip";
    broken.source = "extern \"C\" __global__ void k(int* a) { a[0] = undefined_thing; }\n";
    auto code = hip::compile(cache, k_target, broken);
    if (!code)
      return std::move(code).error();
    return code->info;
  }
  Expected<Key> key(const Config& config) override {
    return hip::make_key(config, m_program, k_target);
  }

  Expected<Key> key_by_another_compiler(const Config& config) override {
    auto real = hip::toolchain();
    if (!real)
      return real.error();
    hip::Toolchain other = **real;
    other.fields.emplace_back("another_build", "1");
    auto target = hip::canonical_target(k_target, other.targets);
    if (!target)
      return target.error();
    return hip::make_key(other, *target, config, m_program).first;
  }

private:
  const hip::Program m_program = test::hip_kernel("saxpy.hip");
};

TEST(HipCases, CountersAfterEveryCall) {
  HipCase backend;
  test::expect_counter_table(backend);
}

TEST(HipCases, EveryUserTierFaultStillGivesTheKernelWithOneWarning) {
  test::expect_faults_contained([] { return std::make_unique<HipCase>(); });
}

TEST(HipCases, APackageMadeWithAnotherCompilerServesWithoutCompiling) {
  HipCase backend;
  test::expect_packages_first(backend);
}

TEST(HipCases, ARememberedKeyWhoseEntryWasEvictedIsCompiledAgain) {
  HipCase backend;
  test::expect_remembered_key_evicted(backend);
}

} // namespace
} // namespace jitcache
