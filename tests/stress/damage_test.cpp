// The damage harness in CI: a few trials of each kind of damage (bench/core/bench_damage runs
// hundreds). Each kind is its own test, with its own populated cache.
#include "tests/stress/damage_harness.hpp"

#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

namespace jitcache::test {
namespace {

// Trials of each kind per CI run: the whole suite stays well under two minutes on 2 cores.
constexpr std::uint32_t k_trials = 2;

class DamageTest : public ::testing::TestWithParam<DamageKind> {};

TEST_P(DamageTest, BuildsSurviveReturnRightKernelsAndHealTheCache) {
  const DamageTools tools{JITCACHE_CLI, STRESS_WORKER, JITCACHE_KERNELS};
  TempDir tmp;
  const std::filesystem::path pristine = tmp.path() / "pristine";
  const std::string populated = populate_cache(tools, pristine);
  ASSERT_EQ(populated, "");
  for (std::uint32_t trial = 0; trial < k_trials; ++trial) {
    // A seed per kind and trial: a failure names it, and bench_damage --seed replays it.
    const std::uint32_t seed = 1000 * (static_cast<std::uint32_t>(GetParam()) + 1) + trial;
    const TrialResult result =
        run_damage_trial(tools, pristine, tmp.path() / "work", GetParam(), seed);
    EXPECT_TRUE(result.passed) << to_string(GetParam()) << ", seed " << seed << ": "
                               << result.failure;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKind, DamageTest, ::testing::ValuesIn(all_damage_kinds()),
                         [](const ::testing::TestParamInfo<DamageKind>& info) {
                           std::string name;
                           for (char c : to_string(info.param))
                             if (std::isalnum(static_cast<unsigned char>(c)))
                               name += c;
                           return name;
                         });

} // namespace
} // namespace jitcache::test
