// The command-line contract of DESIGN.md: subcommands, flags, JSON fields, errors, exit codes.
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sample_kernels.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/terminal.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace jitcache {
namespace {
using test::k_kernels;
using test::k_options;

using test::json_lines;
using test::line_count;
using test::run_cli;

namespace fs = std::filesystem;

class CliTest : public ::testing::Test {
protected:
  std::map<std::string, std::string> env(std::map<std::string, std::string> extra = {}) {
    extra.emplace("JITCACHE_DIR", dir.path().string());
    extra.emplace("JITCACHE_OPENCL_STORE", "wait"); // each line reports the bytes stored
    return extra;
  }
  test::ProcessResult build(const std::vector<std::string>& files,
                            std::map<std::string, std::string> extra = {}) {
    std::vector<std::string> args{"build", "--backend", "opencl", "--options", k_options, "--json"};
    args.insert(args.end(), files.begin(), files.end());
    return run_cli(args, env(std::move(extra)));
  }
  test::TempDir dir;
};

TEST_F(CliTest, BuildReportsExactlyTheContractFieldsPerFile) {
  auto r = build({k_kernels + "/reduce.cl", k_kernels + "/stencil.cl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  const std::set<std::string> contract{"file", "backend",    "device",  "key",      "outcome",
                                       "tier", "compile_ms", "load_ms", "total_ms", "bytes"};
  for (const auto& line : lines) {
    std::set<std::string> fields;
    for (auto it = line.begin(); it != line.end(); ++it)
      fields.insert(it.key());
    EXPECT_EQ(fields, contract);
    EXPECT_EQ(line["backend"], "opencl");
    EXPECT_EQ(line["outcome"], "miss");
    EXPECT_EQ(line["tier"], "compile");
    EXPECT_EQ(line["key"].get<std::string>().size(), 64u);
    EXPECT_GT(line["bytes"].get<std::uint64_t>(), 0u);
    EXPECT_GT(line["compile_ms"].get<double>(), 0.0);
  }
  EXPECT_NE(lines[0]["key"], lines[1]["key"]);
}

TEST_F(CliTest, StatsListVerifyClear) {
  ASSERT_EQ(build({k_kernels + "/matmul.cl"}).exit_code, 0);
  ASSERT_EQ(build({k_kernels + "/matmul.cl"}).exit_code, 0);
  auto stats = run_cli({"stats", "--json"}, env());
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  auto lines = json_lines(stats.out);
  ASSERT_EQ(lines.size(), 4u); // opencl, cuda, hip, total
  EXPECT_EQ(lines[0]["backend"], "opencl");
  EXPECT_EQ(lines[0]["misses"], 1);
  EXPECT_EQ(lines[0]["compiles"], 1);
  EXPECT_EQ(lines[0]["hits"], 1);
  EXPECT_EQ(lines[0]["hits_by_tier"]["user"], 1);
  EXPECT_EQ(lines[0]["entries"], 1);
  EXPECT_EQ(lines[3]["backend"], "total");
  EXPECT_GT(lines[3]["file_bytes"].get<std::uint64_t>(), lines[3]["bytes"].get<std::uint64_t>());
  EXPECT_EQ(lines[3]["max_file_bytes"], nullptr) << "no limit, no bound";
  const auto bounded =
      json_lines(run_cli({"stats", "--json"}, env({{"JITCACHE_MAX_SIZE", "1M"}})).out);
  ASSERT_EQ(bounded.size(), 4u);
  EXPECT_EQ(bounded[3]["max_file_bytes"], (1u << 20) + (256u << 10)) << "the limit and its slack";

  auto list = run_cli({"list", "--json"}, env());
  ASSERT_EQ(list.exit_code, 0);
  auto entries = json_lines(list.out);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0]["backend"], "opencl");
  EXPECT_EQ(entries[0]["valid"], true);

  auto verify = run_cli({"verify", "--json"}, env());
  EXPECT_EQ(verify.exit_code, 0);
  EXPECT_EQ(json_lines(verify.out).back()["ok"], true);

  auto clear = run_cli({"clear", "--json"}, env());
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  EXPECT_EQ(json_lines(clear.out)[0]["cleared"], 1);
  EXPECT_TRUE(run_cli({"list", "--json"}, env()).out.empty());
}

// ccache's habits: `stats -z`/`--zero` zeroes the counters and keeps the entries; a size of 0
// is "no limit" for `prune --max-size` as for JITCACHE_MAX_SIZE.
TEST_F(CliTest, StatsZeroKeepsEntriesAndZeroMeansNoLimit) {
  ASSERT_EQ(build({k_kernels + "/matmul.cl"}).exit_code, 0);
  ASSERT_EQ(build({k_kernels + "/matmul.cl"}).exit_code, 0);
  const auto opencl = [&] { return json_lines(run_cli({"stats", "--json"}, env()).out).at(0); };
  ASSERT_EQ(opencl()["hits"], 1);
  { // the hit was told through the use log: while an append stopped mid-way holds it, its
    // counters cannot be zeroed, and are not
    const int held = ::open((dir.path() / "v1" / "uses.log").c_str(), O_RDONLY);
    ASSERT_GE(held, 0);
    ASSERT_EQ(::flock(held, LOCK_SH), 0);
    auto refused = run_cli({"stats", "--zero"}, env());
    ::close(held);
    EXPECT_EQ(refused.exit_code, 1) << refused.out;
    EXPECT_NE(refused.err.find("held by another process"), std::string::npos) << refused.err;
    EXPECT_EQ(opencl()["hits"], 1);
  }
  for (const char* flag : {"--zero", "-z"}) {
    auto zeroed = run_cli({"stats", flag}, env());
    ASSERT_EQ(zeroed.exit_code, 0) << flag << ": " << zeroed.err;
    EXPECT_EQ(zeroed.out, "statistics zeroed\n");
    const auto after = opencl();
    for (const char* counter : {"hits", "misses", "compiles", "bytes_stored"})
      EXPECT_EQ(after[counter], 0) << flag << " " << counter;
    EXPECT_EQ(after["entries"], 1) << "the entries stay";
  }
  ASSERT_EQ(build({k_kernels + "/matmul.cl"}).exit_code, 0);
  EXPECT_EQ(opencl()["hits"], 1) << "counted again from zero";

  auto pruned = run_cli({"prune", "--max-size", "0", "--json"}, env());
  ASSERT_EQ(pruned.exit_code, 0) << pruned.err;
  const auto line = json_lines(pruned.out).at(0);
  EXPECT_EQ(line["evicted"], 0) << pruned.out;
  EXPECT_EQ(line["max_size"], nullptr);
  EXPECT_EQ(line["entries"], 1);
  // stats says, per backend, when a runtime's own cache control turns jitcache's cache off.
  auto off = run_cli({"stats"}, env({{"POCL_KERNEL_CACHE", "0"}}));
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find("opencl: 1 hits"), std::string::npos) << off.out;
  EXPECT_NE(off.out.find("jitcache's cache is off: POCL_KERNEL_CACHE=0"), std::string::npos)
      << off.out;
  EXPECT_EQ(json_lines(run_cli({"stats", "--json"}, env()).out).at(0).count("persistent_off"), 0u);
  auto unlimited = run_cli({"stats", "--json"}, env({{"JITCACHE_MAX_SIZE", "0"}}));
  EXPECT_EQ(unlimited.err, "") << "0 is a documented value, not a mistake";
  EXPECT_EQ(json_lines(unlimited.out).at(3)["max_size"], nullptr);
}

// `list`: list_test.cpp.

// On a terminal, `build` (here `--wait`, whose stores take seconds per kernel on PoCL) names the
// file in the works from its first output on, estimates the time left once a file is done, and
// clears its line at the end; the result lines go to stdout untouched, as they do off a
// terminal, where stderr shows no progress at all.
TEST_F(CliTest, BuildShowsProgressOnATerminalAndOnlyThere) {
  const std::string first = k_kernels + "/reduce.cl", second = k_kernels + "/stencil.cl";
  const fs::path out = dir.path() / "out.jsonl";
  const test::TerminalRun run =
      test::run_on_terminal({JITCACHE_CLI, "build", "--backend", "opencl", "--wait", "--options",
                             k_options, "--json", first, second},
                            env(), out.string());
  ASSERT_EQ(run.spawned, 0);
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.shown;
  const std::string& shown = run.shown;
  EXPECT_EQ(shown.rfind("\r\033[K0/2 done, 0 failed, ", 0), 0u) << shown;
  EXPECT_LT(shown.find(", now " + first + " ("), shown.find('\r', 1)) << "named at once: " << shown;
  EXPECT_NE(shown.find(", estimating"), std::string::npos) << shown;
  const auto one_done = shown.find("\r\033[K1/2 done, 0 failed, ");
  ASSERT_NE(one_done, std::string::npos) << shown;
  EXPECT_NE(shown.find(", now " + second + " (", one_done), std::string::npos) << shown;
  EXPECT_TRUE(shown.find(" left", one_done) != std::string::npos ||
              shown.find("more than estimated", one_done) != std::string::npos)
      << shown;
  EXPECT_EQ(shown.substr(shown.size() - 4), "\r\033[K") << "cleared at the end: " << shown;
  std::ifstream in(out);
  const std::string printed{std::istreambuf_iterator<char>(in), {}};
  const auto lines = json_lines(printed);
  ASSERT_EQ(lines.size(), 2u) << printed;
  EXPECT_EQ(lines[0]["file"], first);
  EXPECT_EQ(lines[1]["file"], second);
  EXPECT_EQ(printed.find('\033'), std::string::npos) << "no progress on stdout";

  auto plain = build({first, second});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find('\033'), std::string::npos) << plain.err;
  EXPECT_EQ(plain.err.find(" done, "), std::string::npos) << plain.err;
  EXPECT_EQ(json_lines(plain.out).size(), 2u);
}

TEST_F(CliTest, InfoReportsConfigurationAndRuntimeCaches) {
  auto r =
      run_cli({"info", "--json"}, env({{"POCL_KERNEL_CACHE", "0"}, {"JITCACHE_MAX_SIZE", "1G"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info["cache_dir"], (dir.path() / "v1").string());
  EXPECT_EQ(info["max_size"], 1ull << 30);
  EXPECT_EQ(info["variables"]["POCL_KERNEL_CACHE"], "0");
  EXPECT_EQ(info["backends"]["opencl"]["built"], true);
  EXPECT_EQ(info["backends"]["opencl"]["persistent"], false);
  EXPECT_NE(info["backends"]["opencl"]["reason"].get<std::string>().find("POCL_KERNEL_CACHE=0"),
            std::string::npos);
  EXPECT_TRUE(info["backends"]["opencl"]["facts"].contains("POCL_KERNEL_CACHE"));
  std::set<std::string> caches;
  for (const auto& cache : info["runtime_caches"])
    caches.insert(cache["name"].get<std::string>());
  EXPECT_EQ(caches,
            (std::set<std::string>{"pocl", "pyopencl", "pytools", "cuda-driver", "cupy", "comgr"}));

  auto text = run_cli({"info"}, env());
  EXPECT_NE(text.out.find("cache directory: " + (dir.path() / "v1").string()), std::string::npos);
}

// Usage errors (exit 2, with the command's usage): errors_test.cpp.
TEST_F(CliTest, BadInputGivesOneLineErrorsAndNonZeroExits) {
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const Case cases[] = {
      {{"build", "--backend", "opencl", "/nonexistent/k.cl"}, "cannot read /nonexistent/k.cl"},
      {{"build", "--backend", "opencl", "--device", "7", k_kernels + "/matmul.cl"},
       "--device 7 does not exist"},
      {{"build", "--backend", "opencl", "--arch", "sm_90", k_kernels + "/matmul.cl"}, "--arch"},
  };
  for (const Case& c : cases) {
    auto r = run_cli(c.args, env());
    EXPECT_NE(r.exit_code, 0) << c.expect;
    EXPECT_EQ(line_count(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(CliTest, EmptySourceFile) {
  std::ofstream(dir.path() / "empty.cl").close();
  auto r = build({(dir.path() / "empty.cl").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("empty source"), std::string::npos) << r.err;
}

TEST_F(CliTest, OnlyRegularFilesUpToTheLimitAreRead) {
  // A FIFO with no writer (opening it must not wait), a device that never ends, a directory,
  // and a file over --max-source-size: each a one-line error, nothing built, nothing stored.
  const auto fifo = dir.path() / "fifo.cl";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto big = dir.path() / "big.cl";
  std::ofstream(big) << std::string(2048, ' ') << "__kernel void k() {}\n";
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const Case cases[] = {
      {{"build", "--backend", "opencl", fifo.string()}, "a FIFO, not a regular file"},
      {{"build", "--backend", "opencl", "/dev/zero"}, "a device, not a regular file"},
      {{"build", "--backend", "opencl", dir.path().string()}, "a directory, not a regular file"},
      {{"build", "--backend", "opencl", "--max-source-size", "1K", big.string()},
       "over the limit of 1.0 KiB"},
      {{"explain", "--backend", "opencl", "--max-source-size", "1K", big.string()},
       "over the limit of 1.0 KiB"},
  };
  for (const Case& c : cases) {
    auto r = run_cli(c.args, env());
    EXPECT_EQ(r.exit_code, 1) << c.expect;
    EXPECT_EQ(line_count(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
  }
  auto lots =
      run_cli({"build", "--backend", "opencl", "--max-source-size", "lots", big.string()}, env());
  EXPECT_EQ(lots.exit_code, 2) << "a usage error";
  EXPECT_EQ(lots.err.rfind("jitcache: error: --max-source-size lots: not a size", 0), 0u)
      << lots.err;
  auto raised = build({big.string()});
  EXPECT_EQ(raised.exit_code, 0) << raised.err << "the default limit (64M) admits it";
}

TEST_F(CliTest, CompileErrorPrintsTheBuildLogAndStoresNothing) {
  std::ofstream(dir.path() / "bad.cl") << "__kernel void f(__global int* x) { x[0] = nope; }\n";
  auto r = build({(dir.path() / "bad.cl").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("undeclared identifier 'nope'"), std::string::npos) << r.err;
  EXPECT_TRUE(run_cli({"list", "--json"}, env()).out.empty());
}

TEST_F(CliTest, GarbageEnvironmentWarnsOnceAndUsesDefaults) {
  auto r = build({k_kernels + "/nbody.cl"},
                 {{"JITCACHE_MAX_SIZE", "banana"}, {"JITCACHE_LOG", "shouty"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("JITCACHE_MAX_SIZE=banana"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("JITCACHE_LOG=shouty"), std::string::npos) << r.err;
  EXPECT_EQ(line_count(r.err), 2u) << r.err;
}

TEST_F(CliTest, CacheDirThatIsAFileStillBuildsAndLeavesTheFileAlone) {
  const auto file = dir.path() / "cachefile";
  std::ofstream(file) << "precious";
  auto r = run_cli(
      {"build", "--backend", "opencl", "--options", k_options, "--json", k_kernels + "/nbody.cl"},
      {{"JITCACHE_DIR", file.string()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("not a directory"), std::string::npos) << r.err;
  std::ifstream in(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "precious");
}

TEST_F(CliTest, MissingDirectoryIsCreatedWithParents) {
  auto r =
      run_cli({"build", "--backend", "opencl", "--options", k_options, k_kernels + "/nbody.cl"},
              {{"JITCACHE_DIR", (dir.path() / "a" / "b").string()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "a" / "b" / "v1" / "data.mdb"));
}

TEST_F(CliTest, DisabledCacheWritesNothing) {
  auto r = build({k_kernels + "/nbody.cl"}, {{"JITCACHE_DISABLE", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "v1"));
}

// A cache directory the user cannot write: reads work, nothing is written, builds succeed.
// Root bypasses permissions, so the CLI runs as 'nobody' when the test runs as root.
TEST_F(CliTest, UnwritableCacheDirectoryIsUsedReadOnly) {
  ASSERT_EQ(build({k_kernels + "/nbody.cl"}).exit_code, 0);
  const std::string cache = dir.path().string();
  ::chmod(dir.path().c_str(), 0755);
  ::chmod((dir.path() / "v1").c_str(), 0555);
  ::chmod((dir.path() / "v1" / "data.mdb").c_str(), 0444);
  ::chmod((dir.path() / "v1" / "lock.mdb").c_str(), 0444);
  std::vector<std::string> argv;
  if (::geteuid() == 0) {
    if (::access("/usr/bin/setpriv", X_OK) != 0)
      GTEST_SKIP() << "running as root without setpriv: cannot drop privileges";
    argv = {"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"};
  }
  argv.push_back(JITCACHE_CLI);
  for (const char* a : {"build", "--backend", "opencl", "--options"})
    argv.push_back(a);
  argv.push_back(k_options);
  argv.push_back("--json");
  argv.push_back(k_kernels + "/nbody.cl");
  argv.push_back(k_kernels + "/matmul.cl");
  // A home of its own that 'nobody' can write (PoCL keeps its cache there), not a shared one.
  const std::string home = (dir.path() / "home").string();
  std::filesystem::create_directory(home);
  ::chmod(home.c_str(), 0777);
  auto r = test::run_process(
      argv, {{"JITCACHE_DIR", cache}, {"HOME", home}, {"XDG_CACHE_HOME", home + "/.cache"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["outcome"], "hit");
  EXPECT_EQ(lines[1]["outcome"], "miss");
  EXPECT_NE(r.err.find("read-only"), std::string::npos) << r.err;
  ::chmod((dir.path() / "v1").c_str(), 0700);
  EXPECT_EQ(json_lines(run_cli({"list", "--json"}, env()).out).size(), 1u);
}

} // namespace
} // namespace jitcache
