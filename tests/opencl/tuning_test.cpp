// The tuning database on PoCL: the example's tiled matrix multiply (kernels/matmul_tuned.cl)
// tuned for a tiny problem, with a candidate that fails to compile and one that computes a
// wrong answer; the choice is kept, found by a later process's lookup, and listed by the CLI.
#include "examples/tuned_matmul.hpp"

#include "core/tuning/tuning_record.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

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

// Every JITCACHE_TUNE mode on PoCL with the example's kernel, each in a Cache of its own as a new
// process would have it: off never tunes; missing tunes a problem once (two compiles: the
// default and the candidate) and then reads its record; all tunes what the user tier lacks,
// through the kernel cache (no compile); retune measures again once per process, replacing the
// record; clean drops the records of the problems met; an unknown value is off with a warning.
TEST_F(TuningOpenclTest, EveryModeOnTheRealKernel) {
  const tuning::Family family = examples::matmul_family();
  auto device = opencl::tuning_device(m_device);
  ASSERT_TRUE(device) << device.error().message;
  const auto read = examples::matmul_source(JITCACHE_KERNELS);
  ASSERT_TRUE(read) << read.error().message;
  tuning::TuneOptions options;
  options.warmup = 0;
  options.repeats = 1;
  struct Outcome {
    tuning::Choice choice;
    std::uint64_t tuned = 0, compiles = 0;
  };
  // select() in `cache` for an n x n x n problem, then what it counted.
  const auto select = [&](Cache& cache, int n) {
    examples::MatmulProblem problem(cache, m_context, m_device, n, n, n, *read);
    const Stats before = cache.session_stats();
    Outcome out;
    out.choice =
        tuning::select(cache, family, problem.problem(), *device,
                       problem.trials({{{"TILE", "4"}, {"WPT", "2"}}}), std::nullopt, options);
    const Stats after = cache.session_stats();
    out.tuned = after.get(tuning::k_tuning_backend, Counter::tuned) -
                before.get(tuning::k_tuning_backend, Counter::tuned);
    out.compiles = after.get("opencl", Counter::compiles) - before.get("opencl", Counter::compiles);
    return out;
  };
  const auto lookup = [&](Cache& cache, int n) {
    return tuning::lookup(cache, family, examples::matmul_problem(n, n, n), *device);
  };
  {
    Cache cache(config("off"));
    const Outcome off = select(cache, 16);
    EXPECT_EQ(off.choice.origin, tuning::Origin::declared);
    EXPECT_EQ(off.tuned, 0u);
    EXPECT_EQ(off.compiles, 0u);
  }
  std::int64_t tuned_when = 0;
  {
    Cache cache(config("missing"));
    const Outcome first = select(cache, 16);
    EXPECT_EQ(first.choice.origin, tuning::Origin::user);
    ASSERT_TRUE(first.choice.record);
    EXPECT_EQ(first.choice.record->method, tuning::Method::tuned);
    EXPECT_EQ(first.choice.record->candidates, 2u);
    EXPECT_EQ(first.tuned, 1u);
    EXPECT_EQ(first.compiles, 2u);
    tuned_when = first.choice.record->when;
  }
  {
    Cache cache(config("missing"));
    const Outcome again = select(cache, 16);
    EXPECT_EQ(again.choice.origin, tuning::Origin::user);
    EXPECT_EQ(again.tuned, 0u);
    EXPECT_EQ(again.compiles, 0u);
  }
  {
    Cache cache(config("all"));
    EXPECT_EQ(select(cache, 16).tuned, 0u); // the user tier has it
    const Outcome other = select(cache, 32);
    EXPECT_EQ(other.choice.origin, tuning::Origin::user);
    EXPECT_EQ(other.tuned, 1u);
    EXPECT_EQ(other.compiles, 0u); // the same two kernels, from the user tier
  }
  {
    Cache cache(config("retune"));
    const Outcome retuned = select(cache, 16);
    EXPECT_EQ(retuned.tuned, 1u);
    EXPECT_EQ(retuned.compiles, 0u);
    ASSERT_TRUE(retuned.choice.record);
    EXPECT_GE(retuned.choice.record->when, tuned_when);
    EXPECT_EQ(select(cache, 16).tuned, 0u); // once per process
    const auto kept = lookup(cache, 16);
    ASSERT_TRUE(kept.record);
    EXPECT_EQ(kept.record->when, retuned.choice.record->when);
  }
  {
    Cache cache(config("clean"));
    const Outcome cleaned = select(cache, 16);
    EXPECT_EQ(cleaned.choice.origin, tuning::Origin::declared);
    EXPECT_EQ(cleaned.tuned, 0u);
    EXPECT_EQ(lookup(cache, 16).origin, tuning::Origin::declared);
    EXPECT_EQ(lookup(cache, 32).origin, tuning::Origin::user); // not met: kept
  }
  {
    const Config unknown = config("exhaustive");
    ASSERT_EQ(unknown.warnings.size(), 1u);
    EXPECT_NE(unknown.warnings[0].find("JITCACHE_TUNE"), std::string::npos) << unknown.warnings[0];
    EXPECT_EQ(unknown.tune, TuneMode::off);
    Cache cache(unknown);
    const Outcome off = select(cache, 16);
    EXPECT_EQ(off.choice.origin, tuning::Origin::declared);
    EXPECT_EQ(off.tuned, 0u);
  }
  const auto listed =
      test::run_cli({"tune", "list", "--json"}, {{"JITCACHE_DIR", m_dir.path().string()}});
  const auto lines = test::json_lines(listed.out);
  ASSERT_EQ(lines.size(), 1u) << listed.out;
  EXPECT_EQ(lines[0].at("problem").at("N"), "32");
}

// Offline tuning (issue 15, part 5): the problems an application met are in its record
// (JITCACHE_RECORD), and `jitcache tune RECORD --runner` tunes each on PoCL through the
// example's runner, two at once, into the user tier; a problem the runner cannot tune and a line
// that is not a problem are named by FILE:LINE, and the rest is tuned. Tuning the record again
// finds every record and compiles nothing.
TEST_F(TuningOpenclTest, TheProblemsOfARecordAreTunedByTheRunnerAndFailuresNamed) {
  auto device = opencl::tuning_device(m_device);
  ASSERT_TRUE(device) << device.error().message;
  const auto read = examples::matmul_source(JITCACHE_KERNELS);
  ASSERT_TRUE(read) << read.error().message;
  test::TempDir files;
  const auto record = files.path() / "record.jsonl";
  {
    Config recording = config("off");
    recording.record = record;
    Cache cache(recording);
    for (int n : {16, 32}) {
      examples::MatmulProblem problem(cache, m_context, m_device, n, n, n, *read);
      const auto choice = tuning::select(cache, examples::matmul_family(), problem.problem(),
                                         *device, problem.trials({{{"TILE", "4"}, {"WPT", "2"}}}));
      EXPECT_EQ(choice.origin, tuning::Origin::declared); // off: met, not tuned
    }
  }
  auto lines = test::file_lines(record);
  ASSERT_EQ(lines.size(), 2u);
  nlohmann::json other = nlohmann::json::parse(lines[0]);
  other["family"] = "not_matmul";
  {
    std::ofstream out(record, std::ios::app);
    out << "{\"truncated\": \n" << other.dump() << '\n';
  }

  const std::map<std::string, std::string> env = {{"JITCACHE_DIR", m_dir.path().string()},
                                                  {"JITCACHE_OPENCL_STORE", "wait"}};
  const std::vector<std::string> args = {
      "tune",     record.string(),
      "--runner", std::string(JITCACHE_MATMUL_TUNER) + " " + JITCACHE_KERNELS,
      "--jobs",   "2",
      "--json"};
  const auto tuned = test::run_cli(args, env);
  EXPECT_EQ(tuned.exit_code, 1) << tuned.err;
  EXPECT_NE(tuned.err.find("record.jsonl:3: not a tuning problem's line"), std::string::npos)
      << tuned.err;
  EXPECT_NE(tuned.err.find("record.jsonl:4: not_matmul"), std::string::npos) << tuned.err;
  EXPECT_NE(tuned.err.find("not a problem of matmul_tuned"), std::string::npos) << tuned.err;
  std::map<std::string, nlohmann::json> choices; // by N
  for (const auto& line : test::json_lines(tuned.out))
    if (line.at("outcome") == "ok")
      choices[line.at("problem").at("N")] = line.at("choice");
  ASSERT_EQ(choices.size(), 2u) << tuned.out;
  for (const auto& [n, choice] : choices) {
    EXPECT_EQ(choice.at("origin"), "user") << n;
    EXPECT_EQ(choice.at("method"), "tuned") << n;
    EXPECT_EQ(choice.at("candidates"), 2) << n; // the default and the recorded TILE=4,WPT=2
  }
  const auto listed = test::run_cli({"tune", "list", "--json"}, env);
  EXPECT_EQ(test::json_lines(listed.out).size(), 2u) << listed.out;

  const auto compiles = [&] {
    for (const auto& line : test::json_lines(test::run_cli({"stats", "--json"}, env).out))
      if (line.at("backend") == "opencl")
        return line.at("compiles").get<int>();
    return -1;
  };
  const int before = compiles();
  EXPECT_EQ(before, 2); // each candidate once, whichever runner prepared it first
  const auto again = test::run_cli(args, env);
  EXPECT_EQ(again.exit_code, 1) << again.err; // the other family still fails
  for (const auto& line : test::json_lines(again.out)) {
    if (line.at("outcome") == "ok") {
      EXPECT_EQ(line.at("choice"), choices.at(line.at("problem").at("N"))) << line;
    }
  }
  EXPECT_EQ(compiles(), before);
}

// A runner that hangs is killed at --timeout, and one that prints no choice is a failure
// saying so; both are named by FILE:LINE.
TEST_F(TuningOpenclTest, ARunnerThatHangsOrSaysNothingIsAFailureNamedByItsLine) {
  test::TempDir files;
  const auto record = files.path() / "record.jsonl";
  {
    std::ofstream out(record);
    out << nlohmann::json({{"format", 1},
                           {"kind", "tuning"},
                           {"family", "matmul_tuned"},
                           {"family_version", 1},
                           {"problem", {{"M", "16"}, {"N", "16"}, {"K", "16"}}},
                           {"backend", "opencl"},
                           {"device", "cpu"},
                           {"identity", nlohmann::json::object()},
                           {"candidates", nlohmann::json::array()}})
               .dump()
        << '\n';
  }
  const std::map<std::string, std::string> env = {{"JITCACHE_DIR", m_dir.path().string()}};
  const auto hung =
      test::run_cli({"tune", record.string(), "--runner", "sleep 30", "--timeout", "0.3"}, env);
  EXPECT_EQ(hung.exit_code, 1);
  EXPECT_NE(hung.err.find("record.jsonl:1: matmul_tuned K=16,M=16,N=16: the runner was killed "
                          "after --timeout 0.3 s"),
            std::string::npos)
      << hung.err;
  // One that closes its output first and then hangs is killed at the limit all the same; one
  // whose output is not UTF-8 is reported in JSON, the bytes replaced.
  const auto closed = test::run_cli(
      {"tune", record.string(), "--runner", "exec >/dev/null 2>&1; sleep 30", "--timeout", "0.3"},
      env);
  EXPECT_EQ(closed.exit_code, 1);
  EXPECT_NE(closed.err.find("the runner was killed after --timeout 0.3 s"), std::string::npos)
      << closed.err;
  // One that leaves a process behind holding its output is done when it exits: its status and
  // last line are reported, not a time-out at the limit (before, tune waited for the output to
  // close, i.e. for the process left behind).
  const auto left = test::run_cli({"tune", record.string(), "--runner",
                                   "sleep 60 & echo the runner is done; exit 3", "--timeout", "50"},
                                  env);
  EXPECT_EQ(left.exit_code, 1);
  EXPECT_NE(left.err.find("the runner exited with status 3: the runner is done"), std::string::npos)
      << left.err;
  const auto bytes = test::run_cli(
      {"tune", record.string(), "--runner", "printf 'bad \\377 byte\\n'; exit 3", "--json"}, env);
  EXPECT_EQ(bytes.exit_code, 1) << bytes.err;
  ASSERT_FALSE(bytes.out.empty()) << bytes.err;
  for (const auto& line : test::json_lines(bytes.out))
    EXPECT_TRUE(line.is_object()) << line;
  EXPECT_NE(bytes.out.find("bad \xEF\xBF\xBD byte"), std::string::npos) << bytes.out;
  const auto silent =
      test::run_cli({"tune", record.string(), "--runner", "cat > /dev/null; echo done"}, env);
  EXPECT_EQ(silent.exit_code, 1);
  EXPECT_NE(silent.err.find("record.jsonl:1: matmul_tuned K=16,M=16,N=16: the runner printed "
                            "no choice (jitcache::tuning::choice_line): done"),
            std::string::npos)
      << silent.err;
}

} // namespace
} // namespace jitcache
