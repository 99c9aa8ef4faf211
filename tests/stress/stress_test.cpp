// Many processes, one cache, real PoCL compiles, and SIGKILL at random moments: one compile per
// kernel, correct programs in every survivor, and a cache that `jitcache verify` passes.
#include "tests/support/child_process.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace jitcache {
namespace {

namespace fs = std::filesystem;
using test::ChildProcess;

constexpr int k_processes = 16;
constexpr int k_kernels = 20;
constexpr int k_killed = 4;
constexpr int k_sigkill_status = 128 + SIGKILL;

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      lines.push_back(nlohmann::json::parse(line));
  return lines;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `argv` in a child with `env` added to the environment and stdout going to `out`.
std::unique_ptr<ChildProcess> start(std::vector<std::string> argv,
                                    const std::map<std::string, std::string>& env,
                                    const fs::path& out) {
  return std::make_unique<ChildProcess>([argv, env, out]() mutable {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ::dup2(fd, 1) < 0)
      return 97;
    for (const auto& [name, value] : env)
      ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (std::string& a : argv)
      args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    return 96;
  });
}

class StressTest : public ::testing::Test {
protected:
  std::map<std::string, std::string> env() const {
    return {{"JITCACHE_DIR", (dir.path() / "cache").string()},
            {"JITCACHE_OPENCL_STORE", "wait"},
            {"POCL_CACHE_DIR", (dir.path() / "pocl").string()}};
  }
  nlohmann::json opencl_stats() const {
    auto stats = test::run_cli({"stats", "--json"}, env());
    EXPECT_EQ(stats.exit_code, 0) << stats.err;
    return json_lines(stats.out).at(0);
  }
  void expect_verified() const {
    auto verify = test::run_cli({"verify", "--json"}, env());
    EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
    EXPECT_EQ(json_lines(verify.out).back()["ok"], true);
  }
  test::TempDir dir;
};

TEST_F(StressTest, SixteenProcessesTwentyKernelsSomeKilledCompileEachKernelOnce) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < k_processes; ++i)
    workers.push_back(
        start({STRESS_WORKER, std::to_string(seed + i), std::to_string(k_kernels), "1000"}, env(),
              dir.path() / ("out" + std::to_string(i))));
  // Kill a few at random moments: while waiting, compiling, storing or flushing.
  std::vector<std::pair<int, int>> kills; // (worker, ms after start)
  for (int n = 0; n < k_killed; ++n)
    kills.emplace_back(n * (k_processes / k_killed) + static_cast<int>(random() % 4),
                       200 + static_cast<int>(random() % 2300));
  std::sort(kills.begin(), kills.end(), [](auto a, auto b) { return a.second < b.second; });
  const auto started = std::chrono::steady_clock::now();
  for (const auto& [victim, at] : kills) {
    std::this_thread::sleep_until(started + std::chrono::milliseconds(at));
    workers[static_cast<std::size_t>(victim)]->kill(SIGKILL);
  }
  int killed_mid_run = 0, finished = 0;
  for (int i = 0; i < k_processes; ++i) {
    const int status = workers[static_cast<std::size_t>(i)]->wait();
    const auto lines = json_lines(slurp(dir.path() / ("out" + std::to_string(i))));
    std::set<int> built;
    for (const auto& line : lines) {
      EXPECT_EQ(line["ok"], true) << "worker " << i << ": " << line.dump();
      built.insert(line["kernel"].get<int>());
    }
    if (status == k_sigkill_status) {
      ++killed_mid_run;
      continue;
    }
    ++finished;
    EXPECT_EQ(status, 0) << "worker " << i << ": " << workers[static_cast<std::size_t>(i)]->err();
    EXPECT_EQ(built.size(), static_cast<std::size_t>(k_kernels)) << "worker " << i;
  }
  std::cout << "[ stress   ] " << finished << " workers finished, " << killed_mid_run
            << " killed mid-run\n";
  EXPECT_GT(finished, 0);

  const nlohmann::json stats = opencl_stats();
  EXPECT_EQ(stats["compiles"], k_kernels) << stats.dump();
  EXPECT_EQ(stats["entries"], k_kernels) << stats.dump();
  expect_verified();

  // A process that comes later compiles nothing.
  auto late =
      start({STRESS_WORKER, "1", std::to_string(k_kernels), "0"}, env(), dir.path() / "late");
  ASSERT_EQ(late->wait(), 0) << late->err();
  for (const auto& line : json_lines(slurp(dir.path() / "late"))) {
    EXPECT_EQ(line["outcome"], "hit") << line.dump();
    EXPECT_EQ(line["ok"], true);
  }
  EXPECT_EQ(opencl_stats()["compiles"], k_kernels);
}

TEST_F(StressTest, KilledAtAnyMomentTheCacheStillVerifies) {
  std::mt19937 random(std::random_device{}());
  std::vector<std::string> files;
  // Each round compiles two new kernels and stores them (compile, write, counters, refresh):
  // the kill lands anywhere in that.
  for (int round = 0; round < 10; ++round) {
    std::vector<std::string> args{JITCACHE_CLI, "build", "--backend", "opencl", "--json"};
    for (int k = 0; k < 2; ++k) {
      const fs::path file =
          dir.path() / ("k" + std::to_string(round) + "_" + std::to_string(k) + ".cl");
      std::ofstream(file) << "__kernel void f(__global float* x) { x[get_global_id(0)] *= "
                          << round * 2 + k + 2 << ".0f; }\n";
      files.push_back(file.string());
      args.push_back(file.string());
    }
    auto build = start(args, env(), dir.path() / "build.out");
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 700));
    build->kill(SIGKILL);
    build->wait();
    expect_verified();
  }
  expect_verified();
  std::vector<std::string> args{"build", "--backend", "opencl", "--json"};
  args.insert(args.end(), files.begin(), files.end());
  auto again = test::run_cli(args, env());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(json_lines(again.out).size(), files.size());
  expect_verified();
  EXPECT_EQ(opencl_stats()["entries"], static_cast<int>(files.size()));
}

} // namespace
} // namespace jitcache
