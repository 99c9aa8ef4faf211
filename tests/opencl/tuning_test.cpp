// The tuning database on PoCL: the example's tiled matrix multiply (kernels/matmul_tuned.cl)
// tuned for a tiny problem, with a candidate that fails to compile and one that computes a
// wrong answer; the choice is kept, found by a later process's lookup, and listed by the CLI.
#include "examples/tuned_matmul.hpp"

#include "core/tuning_record.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace jitcache {
namespace {

class TuningOpenclTest : public ::testing::Test {
protected:
  void SetUp() override {
    cl_platform_id platform = nullptr;
    cl_uint n = 0;
    ASSERT_EQ(clGetPlatformIDs(1, &platform, &n), CL_SUCCESS);
    ASSERT_EQ(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &m_device, nullptr), CL_SUCCESS);
    m_context = clCreateContext(nullptr, 1, &m_device, nullptr, nullptr, nullptr);
    ASSERT_NE(m_context, nullptr);
  }
  void TearDown() override {
    if (m_context)
      clReleaseContext(m_context);
  }
  Config config(const char* mode = "off") const {
    return Config::from_variables({{"JITCACHE_DIR", m_dir.path().string()},
                                   {"JITCACHE_OPENCL_STORE", "wait"},
                                   {"JITCACHE_TUNE", mode}});
  }
  test::TempDir m_dir;
  cl_device_id m_device = nullptr;
  cl_context m_context = nullptr;
};

TEST_F(TuningOpenclTest, TunesTheTiledMatmulSkippingBrokenCandidatesAndKeepsTheChoice) {
  const tuning::Family family = examples::matmul_family();
  auto device = opencl::tuning_device(m_device);
  ASSERT_TRUE(device) << device.error().message;
  EXPECT_EQ(device->backend, "opencl");
  const auto read = examples::matmul_source(JITCACHE_KERNELS);
  ASSERT_TRUE(read) << read.error().message;
  const std::string& source = *read;
  {
    Cache cache(config("missing"));
    examples::MatmulProblem problem(cache, m_context, m_device, 16, 16, 16, source);
    EXPECT_EQ(tuning::lookup(cache, family, problem.problem(), *device).origin,
              tuning::Origin::declared);
    tuning::Trials trials = problem.trials({{{"TILE", "4"}, {"WPT", "2"}},
                                            {{"TILE", "8"}, {"WPT", "x"}}, // a compile error
                                            {{"TILE", "16"}, {"WPT", "4"}}});
    // A candidate with a wrong answer: the first element of its result is off.
    const auto prepare = trials.prepare;
    trials.prepare = [&](const tuning::Parameters& p,
                         const std::string& defines) -> Expected<tuning::Trial> {
      auto trial = prepare(p, defines);
      if (trial && p.at("TILE") == "16") {
        auto output = trial->output;
        trial->output = [output] {
          std::string bytes = output();
          bytes[3] ^= 0x40; // the first element's exponent
          return bytes;
        };
      }
      return trial;
    };
    tuning::TuneOptions options;
    options.warmup = 0;
    options.repeats = 1;
    testing::internal::CaptureStderr();
    const tuning::Choice choice =
        tuning::select(cache, family, problem.problem(), *device, trials, std::nullopt, options);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("its result differs from the default's"), std::string::npos) << err;
    ASSERT_EQ(choice.origin, tuning::Origin::user);
    ASSERT_TRUE(choice.record);
    EXPECT_EQ(choice.record->candidates, 2u); // the default and TILE=4
    EXPECT_EQ(choice.record->skipped, 2u);
    EXPECT_GT(choice.record->default_ms, 0);
    const Stats stats = cache.session_stats();
    EXPECT_EQ(stats.get("opencl", Counter::compile_errors), 1u);
    EXPECT_EQ(stats.get(tuning::k_tuning_backend, Counter::tuned), 1u);

    // The kept choice computes what the default does.
    auto chosen = problem.compute(choice.parameters);
    auto reference = problem.compute(family.defaults);
    ASSERT_TRUE(chosen && reference);
    EXPECT_EQ(*chosen, *reference);
  }
  {
    Cache cache(config("off"));
    const tuning::Choice again =
        tuning::lookup(cache, family, examples::matmul_problem(16, 16, 16), *device);
    EXPECT_EQ(again.origin, tuning::Origin::user);
  }
  const auto listed =
      test::run_cli({"tune", "list", "--json"}, {{"JITCACHE_DIR", m_dir.path().string()}});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto line = nlohmann::json::parse(listed.out.substr(0, listed.out.find('\n')));
  EXPECT_EQ(line.at("family"), "matmul_tuned");
  EXPECT_EQ(line.at("problem").at("N"), "16");
  EXPECT_EQ(line.at("method"), "tuned");
  EXPECT_EQ(line.at("valid"), true);
}

} // namespace
} // namespace jitcache
