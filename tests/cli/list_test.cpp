// `jitcache list`: what a person recognises an entry by (the source's name, its kernels, the
// target, the size, the age, the hits), for each backend, in text and --json; the hits counted
// across processes, one after another and all at once.
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sample_kernels.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <thread>

namespace jitcache {
namespace {
using test::k_kernels;

using test::json_lines;
using test::run_cli;

class ListTest : public ::testing::Test {
protected:
  std::map<std::string, std::string> env() {
    return {{"JITCACHE_DIR", dir.path().string()}, {"JITCACHE_OPENCL_STORE", "wait"}};
  }
  // `jitcache build` of one file; its JSON line.
  nlohmann::json build(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"build", "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_cli(argv, env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto lines = json_lines(r.out);
    return lines.empty() ? nlohmann::json() : lines.front();
  }
  nlohmann::json build_opencl() {
    return build({"--backend", "opencl", "--options", "-I " + k_kernels, k_kernels + "/matmul.cl"});
  }
  // `list --json`'s lines, by key.
  std::map<std::string, nlohmann::json> listed() {
    auto r = run_cli({"list", "--json"}, env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, nlohmann::json> by_key;
    for (const auto& line : json_lines(r.out))
      by_key[line["key"]] = line;
    return by_key;
  }
  test::TempDir dir;
};

TEST_F(ListTest, ShowsSourceKernelsTargetSizeAgeAndHitsForEachBackend) {
  struct Built {
    std::string backend, source;
    nlohmann::json kernels;
    std::vector<std::string> build;
    std::string key = {}, target = {}; // what the build reports
  };
  std::vector<Built> built{
      {"opencl",
       k_kernels + "/matmul.cl",
       {"matmul_naive", "matmul_tiled", "transpose"},
       {"--backend", "opencl", "--options", "-I " + k_kernels, k_kernels + "/matmul.cl"}}};
#ifdef JITCACHE_TEST_HAVE_CUDA
  // The kernels of a CUDA or HIP entry are its name expressions: `build` gives none.
  built.push_back({"cuda",
                   k_kernels + "/saxpy.cu",
                   nullptr,
                   {"--backend", "cuda", "--arch", "sm_90", k_kernels + "/saxpy.cu"}});
#endif
#ifdef JITCACHE_TEST_HAVE_HIP
  built.push_back({"hip",
                   "saxpy.hip",
                   nullptr,
                   {"--backend", "hip", "--arch", "gfx90a", k_kernels + "/saxpy.hip"}});
#endif
  for (Built& b : built) {
    const auto line = build(b.build);
    ASSERT_EQ(line["outcome"], "miss") << line;
    b.key = line["key"];
    b.target = line["device"];
  }
  auto entries = listed();
  ASSERT_EQ(entries.size(), built.size());
  for (const Built& b : built) {
    const auto& entry = entries.at(b.key);
    EXPECT_EQ(entry["backend"], b.backend);
    EXPECT_EQ(entry["source"], b.source) << entry;
    EXPECT_EQ(entry["kernels"], b.kernels) << entry;
    EXPECT_EQ(entry["target"], b.target) << entry;
    EXPECT_GT(entry["bytes"].get<std::uint64_t>(), 0u);
    EXPECT_LT(entry["last_used_s"].get<std::uint64_t>(), 3600u) << entry;
    EXPECT_EQ(entry["hits"], 0) << entry;
    EXPECT_EQ(entry["valid"], true);
  }
  for (const Built& b : built)
    for (int i = 0; i < 2; ++i)
      ASSERT_EQ(build(b.build)["outcome"], "hit");
  for (int i = 0; i < 2; ++i) { // listing is not a use: the second list sees the same hits
    entries = listed();
    for (const Built& b : built)
      EXPECT_EQ(entries.at(b.key)["hits"], 2) << b.backend << ", list " << i;
  }
  auto text = run_cli({"list"}, env());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const Built& b : built) {
    std::string kernels;
    for (const auto& kernel : b.kernels)
      kernels += (kernels.empty() ? "" : ",") + kernel.get<std::string>();
    const std::string columns = b.key.substr(0, 16) + "  " + b.backend + "  " + b.source + "  " +
                                (kernels.empty() ? "-" : kernels) + "  " + b.target + "  ";
    const auto at = text.out.find(columns);
    ASSERT_NE(at, std::string::npos) << columns << "\n" << text.out;
    const std::string line = text.out.substr(at, text.out.find('\n', at) - at);
    EXPECT_NE(line.find(" ago  hits 2"), std::string::npos) << line;
  }
}

// On PoCL a first run hands its store over to a `jitcache store` process (detach, the
// default): the file's name goes with the request, so that entry is named like one stored in
// the building process.
TEST_F(ListTest, AnOpenclEntryStoredByTheStoreWorkerIsNamedToo) {
  auto variables = env();
  variables["JITCACHE_OPENCL_STORE"] = "detach";
  auto built = run_cli({"build", "--backend", "opencl", "--options", "-I " + k_kernels, "--json",
                        k_kernels + "/stencil.cl"},
                       variables);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  const std::string key = json_lines(built.out).at(0)["key"];
  auto waited = run_cli({"store", "--wait", "--timeout", "240"}, variables);
  ASSERT_EQ(waited.exit_code, 0) << waited.err;
  const auto entry = listed().at(key);
  EXPECT_EQ(entry["source"], k_kernels + "/stencil.cl") << entry;
  EXPECT_EQ(entry["kernels"], nlohmann::json({"gaussian_blur", "jacobi5", "sobel"})) << entry;
}

// Each process that hits adds its hits with the write that keeps its last use: N processes one
// after another count N.
TEST_F(ListTest, CountsTheHitsOfSeparateProcesses) {
  const std::string key = build_opencl()["key"];
  constexpr int k_processes = 5;
  for (int i = 0; i < k_processes; ++i)
    ASSERT_EQ(build_opencl()["outcome"], "hit");
  EXPECT_EQ(listed().at(key)["hits"], k_processes);
}

// Processes hitting at once: each adds its count inside LMDB's write transaction, which runs one
// at a time, so none is lost.
TEST_F(ListTest, CountsTheHitsOfProcessesHittingAtOnce) {
  const std::string key = build_opencl()["key"];
  constexpr int k_processes = 8;
  std::vector<std::string> outcomes(k_processes);
  std::vector<std::thread> threads;
  for (int i = 0; i < k_processes; ++i)
    threads.emplace_back([&, i] { outcomes[i] = build_opencl()["outcome"]; });
  for (auto& thread : threads)
    thread.join();
  for (const auto& outcome : outcomes)
    ASSERT_EQ(outcome, "hit");
  EXPECT_EQ(listed().at(key)["hits"], k_processes);
  auto stats = json_lines(run_cli({"stats", "--json"}, env()).out);
  ASSERT_FALSE(stats.empty());
  EXPECT_EQ(stats[0]["hits_by_tier"]["user"], k_processes) << "what stats counted, per entry";
}

} // namespace
} // namespace jitcache
