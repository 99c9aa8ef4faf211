// The OpenCL loader layer (interposers/opencl_layer) under unchanged programs, each run in
// processes of its own without the layer and under it (OPENCL_LAYERS): a C program that prints
// every answer the runtime gives about its programs, PyOpenCL's own examples and a PyOpenCL
// program using ElementwiseKernel, ReductionKernel and pyopencl.array. Under the layer the
// output is the same on a miss, on a hit (counted for the front-end "opencl-layer"), with a
// damaged cache, and with the layer turned off.
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace jitcache::test {
namespace {

namespace fs = std::filesystem;
using Env = std::map<std::string, std::string>;

// PoCL names the temporary file it compiles in its logs: the one difference two runs may have.
// (A hand scan, not std::regex: GCC 12 at -O1 warns inside <regex>, and CI builds with -Werror.)
std::string normalized(const std::string& text) {
  static const std::string prefix = "tempfile_";
  std::string out;
  std::size_t at = 0;
  for (std::size_t found; (found = text.find(prefix, at)) != std::string::npos;) {
    std::size_t end = found + prefix.size();
    while (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end])) != 0)
      ++end;
    out.append(text, at, found - at).append(end > found + prefix.size() ? "tempfile_X" : prefix);
    at = end;
  }
  return out.append(text, at, std::string::npos);
}

struct Counts {
  std::uint64_t hits = 0, misses = 0, entries = 0;
};

class OpenCLLayer : public ::testing::Test {
protected:
  // Everything a run keeps is under the test's own folder, the files PyOpenCL saves a failed
  // build's source in (TMPDIR) too.
  Env env(bool layer) const {
    fs::create_directories(m_dir.path() / "tmp");
    Env e{{"JITCACHE_DIR", (m_dir.path() / "cache").string()},
          {"TMPDIR", (m_dir.path() / "tmp").string()},
          {"POCL_CACHE_DIR", (m_dir.path() / "pocl").string()},
          {"XDG_CACHE_HOME", (m_dir.path() / "xdg").string()},
          {"PYOPENCL_CTX", "0"},
          {"OPENCL_LAYERS", ""}};
    if (layer)
      e["OPENCL_LAYERS"] = JITCACHE_OPENCL_LAYER_SO;
    return e;
  }

  ProcessResult run(const std::vector<std::string>& argv, bool layer, const Env& extra = {}) {
    Env e = env(layer);
    for (const auto& [name, value] : extra)
      e[name] = value;
    ProcessResult result = run_process(argv, e);
    EXPECT_EQ(result.exit_code, 0) << argv.back() << " (layer " << layer << ")\n" << result.err;
    if (layer) { // the layer hands its stores over to a detached process: done before the next
      ProcessResult waited = run_cli({"store", "--wait", "--timeout", "300"}, env(false));
      EXPECT_EQ(waited.exit_code, 0) << waited.err;
    }
    return result;
  }

  // The layer's counters and the OpenCL entries stored, as `jitcache stats` says.
  Counts counts() {
    Counts c;
    ProcessResult stats = run_cli({"stats", "--json"}, env(false));
    EXPECT_EQ(stats.exit_code, 0) << stats.err;
    std::istringstream lines(stats.out);
    for (std::string line; std::getline(lines, line);) {
      auto json = nlohmann::json::parse(line, nullptr, false);
      if (json.value("front_end", "") == "opencl-layer") {
        c.hits = json.value("hits", std::uint64_t{0});
        c.misses = json.value("misses", std::uint64_t{0});
      }
      if (json.value("backend", "") == "opencl")
        c.entries = json.value("entries", std::uint64_t{0});
    }
    return c;
  }

  TempDir m_dir;
};

const std::vector<std::string> k_probe = {JITCACHE_OPENCL_LAYER_PROBE};

TEST_F(OpenCLLayer, EveryAnswerAboutAProgramIsTheRuntimesOnAMissAndOnAHit) {
  const std::string plain = normalized(run(k_probe, false).out);
  ASSERT_NE(plain.find("results 0.5 3.5"), std::string::npos) << plain;
  const std::string first = normalized(run(k_probe, true).out);
  EXPECT_EQ(first, plain);
  const Counts after_first = counts();
  EXPECT_GE(after_first.misses, 3u);
  EXPECT_GE(after_first.entries, 3u);

  const std::string second = normalized(run(k_probe, true).out);
  EXPECT_EQ(second, plain);
  const Counts after_second = counts();
  // Three programs built (one of them twice) and one that warns: every one a hit; the two
  // programs that fail to compile are the runtime's compiles, each time.
  EXPECT_EQ(after_second.hits - after_first.hits, 4u);
  EXPECT_EQ(after_second.misses, after_first.misses);
  // What `jitcache list` names an application's program by: its kernels, as the runtime names
  // them (the application gives the program no file name).
  ProcessResult listed = run_cli({"list", "--json"}, env(false));
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  std::set<nlohmann::json> kernels;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) {
    const auto entry = nlohmann::json::parse(line);
    EXPECT_EQ(entry["source"], nullptr) << line;
    kernels.insert(entry["kernels"]);
  }
  EXPECT_EQ(kernels.count(nlohmann::json({"add", "scale"})), 1u) << listed.out;
  EXPECT_EQ(kernels.count(nlohmann::json({"warns"})), 1u) << listed.out;
}

TEST_F(OpenCLLayer, APackagedHitOnAnotherCacheAnswersAsTheRuntimeWarningsIncluded) {
  const std::string plain = normalized(run(k_probe, false).out);
  ASSERT_NE(plain.find("this program warns"), std::string::npos) << plain;
  run(k_probe, true);
  const fs::path packages = m_dir.path() / "packages";
  fs::create_directories(packages);
  ProcessResult exported = run_cli(
      {"export", "--backend", "opencl", "--device", "0", "-o", (packages / "pocl.jcpkg").string()},
      env(false));
  ASSERT_EQ(exported.exit_code, 0) << exported.err;

  // Another machine: a user tier of its own, PoCL's cache empty, the package installed.
  fs::remove_all(m_dir.path() / "cache");
  fs::remove_all(m_dir.path() / "pocl");
  const Env installed{{"JITCACHE_SYSTEM_PATH", packages.string()}};
  EXPECT_EQ(normalized(run(k_probe, true, installed).out), plain);
  const Counts c = counts();
  EXPECT_EQ(c.hits, 4u) << "every program the runtime compiles the first time, from the package";
  EXPECT_EQ(c.entries, 0u) << "nothing stored: the package served every program";
}

// Eight processes at once on a new machine's empty user tier, the package installed: each one's
// every answer (the compile's warning included) is the runtime's, every program comes from the
// package, and nothing is stored.
TEST_F(OpenCLLayer, EightProcessesAtOnceFromAPackageEachAnswerAsTheRuntime) {
  const std::string plain = normalized(run(k_probe, false).out);
  run(k_probe, true);
  const fs::path packages = m_dir.path() / "packages";
  fs::create_directories(packages);
  ASSERT_EQ(run_cli({"export", "--backend", "opencl", "--device", "0", "-o",
                     (packages / "pocl.jcpkg").string()},
                    env(false))
                .exit_code,
            0);
  fs::remove_all(m_dir.path() / "cache");
  fs::remove_all(m_dir.path() / "pocl"); // shared by the eight, empty: none has the compile's log
  Env installed = env(true);
  installed["JITCACHE_SYSTEM_PATH"] = packages.string();
  std::vector<ProcessResult> results(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] { results[i] = run_process(k_probe, installed); });
  for (std::thread& t : threads)
    t.join();
  for (const ProcessResult& result : results) {
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(normalized(result.out), plain);
  }
  ASSERT_EQ(run_cli({"store", "--wait", "--timeout", "300"}, env(false)).exit_code, 0);
  const Counts c = counts();
  EXPECT_EQ(c.hits, 8u * 4u) << "each process's four programs, from the package";
  EXPECT_EQ(c.entries, 0u);
}

TEST_F(OpenCLLayer, TurnedOffItPassesEverythingThrough) {
  const std::string plain = normalized(run(k_probe, false).out);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(normalized(run(k_probe, true, {{"JITCACHE_OPENCL_LAYER", "0"}}).out), plain);
  const Counts c = counts();
  EXPECT_EQ(c.hits + c.misses, 0u);
  EXPECT_EQ(c.entries, 0u);
}

TEST_F(OpenCLLayer, ADamagedCacheStillAnswersAsTheRuntime) {
  const std::string plain = normalized(run(k_probe, false).out);
  run(k_probe, true);
  ASSERT_GE(counts().entries, 3u);
  // Every byte of every stored value's pages wrong (the files' first pages, LMDB's meta pages,
  // kept: a file whose meta pages are damaged is simply moved aside).
  std::size_t damaged = 0;
  for (const auto& file : fs::recursive_directory_iterator(m_dir.path() / "cache")) {
    if (!file.is_regular_file() || file.path().filename() != "data.mdb")
      continue;
    std::fstream data(file.path(), std::ios::in | std::ios::out | std::ios::binary);
    const auto size = static_cast<std::streamoff>(fs::file_size(file.path()));
    for (std::streamoff at = 3 * 4096; at < size; at += 61) {
      data.seekp(at);
      data.put('\x5a');
      ++damaged;
    }
  }
  ASSERT_GT(damaged, 0u);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(normalized(run(k_probe, true).out), plain) << "run " << i;
}

// A PyOpenCL program and what of its output is compared (its beginning, up to `until`: what
// follows is timings).
struct Script {
  std::string path;
  std::string until;
};

std::string compared(const std::string& out, const std::string& until) {
  return until.empty() ? out : out.substr(0, out.find(until));
}

class PyOpenCLUnderTheLayer : public OpenCLLayer,
                              public ::testing::WithParamInterface<std::tuple<const char*, bool>> {
};

TEST_P(PyOpenCLUnderTheLayer, AnswersAsWithoutItAndHitsTheSecondTime) {
  const auto& [name, pyopencl_cache] = GetParam();
  const std::string script = std::string(name) == "workload"
                                 ? JITCACHE_PYOPENCL_WORKLOAD
                                 : std::string(JITCACHE_PYOPENCL_EXAMPLES) + "/" + name;
  ASSERT_TRUE(fs::exists(script)) << script << ": install python-pyopencl-doc";
  const std::string until = std::string(name) == "n-body.py" ? "Duration stats" : "";
  const Env extra = pyopencl_cache ? Env{} : Env{{"PYOPENCL_NO_CACHE", "1"}};
  const std::vector<std::string> argv = {JITCACHE_PYOPENCL_PYTHON, script};
  const ProcessResult plain = run(argv, false, extra);
  const bool warned = plain.err.find("CompilerWarning") != std::string::npos;
  for (int i = 0; i < 2; ++i) {
    const ProcessResult layered = run(argv, true, extra);
    EXPECT_EQ(compared(layered.out, until), compared(plain.out, until)) << "run " << i;
    EXPECT_EQ(layered.err.find("CompilerWarning") != std::string::npos, warned) << layered.err;
  }
  const Counts c = counts();
  if (!pyopencl_cache) { // with it, PyOpenCL builds from its own binaries after its first run
    EXPECT_GT(c.misses, 0u);
    EXPECT_EQ(c.hits, c.misses) << "every program of the second run a hit";
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, PyOpenCLUnderTheLayer,
                         ::testing::Combine(::testing::Values("workload", "demo.py",
                                                              "demo_elementwise.py",
                                                              "demo-struct-reduce.py", "n-body.py"),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param);
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           return name + (std::get<1>(info.param) ? "_cache" : "_no_cache");
                         });

} // namespace
} // namespace jitcache::test
