// A damaged data file, through the command-line tool in fresh processes: the issue's
// reproduction (the middle third of data.mdb overwritten with 0xFF bytes after building the
// sample kernels), then builds, clear and prune.
#include "tests/support/process.hpp"
#include "tests/support/sample_kernels.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace jitcache {
namespace {
using test::k_kernels;

namespace fs = std::filesystem;
using test::run_cli;

const std::vector<std::string> k_sources = {"matmul.cl", "nbody.cl", "reduce.cl", "stencil.cl",
                                            "vector_ops.cl"};

class DamagedCache : public ::testing::Test {
protected:
  std::map<std::string, std::string> env() { return {{"JITCACHE_DIR", dir.path().string()}}; }
  // Builds every sample kernel; returns the outcome of each ("hit"/"miss"), in order.
  std::vector<std::string> build_all() {
    std::vector<std::string> args{"build",     "--backend",       "opencl",
                                  "--options", "-I " + k_kernels, "--json"};
    for (const auto& source : k_sources)
      args.push_back(k_kernels + "/" + source);
    const auto r = run_cli(args, env());
    last_err = r.err;
    EXPECT_EQ(r.exit_code, 0) << r.err; // never a crash: every kernel is returned
    std::vector<std::string> outcomes;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);)
      if (!line.empty())
        outcomes.push_back(nlohmann::json::parse(line).at("outcome"));
    EXPECT_EQ(outcomes.size(), k_sources.size()) << r.out << r.err;
    return outcomes;
  }
  fs::path data_file() { return dir.path() / "v1" / "data.mdb"; }
  void overwrite_middle_third() {
    const auto size = fs::file_size(data_file());
    std::fstream file(data_file(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(std::streamoff(size / 3));
    const std::string bytes(size * 2 / 3 - size / 3, '\xff');
    file.write(bytes.data(), std::streamsize(bytes.size()));
  }
  bool has_aside_file() {
    for (const auto& item : fs::directory_iterator(dir.path() / "v1"))
      if (item.path().filename().string().rfind("data.mdb.corrupt-", 0) == 0)
        return true;
    return false;
  }
  test::TempDir dir;
  std::string last_err;
};

TEST_F(DamagedCache, BuildsReturnEveryKernelAndTheThirdBuildHits) {
  build_all();
  overwrite_middle_third();
  build_all(); // sees the damage, contains it
  EXPECT_NE(last_err.find("is damaged"), std::string::npos) << last_err;
  build_all(); // moves the file aside and starts a fresh one
  EXPECT_TRUE(has_aside_file());
  EXPECT_EQ(build_all(), std::vector<std::string>(k_sources.size(), "hit")) << last_err;
}

TEST_F(DamagedCache, ClearLeavesAnEmptyHealthyCache) {
  build_all();
  overwrite_middle_third();
  const auto cleared = run_cli({"clear"}, env());
  EXPECT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_NE(cleared.out.find("cleared"), std::string::npos) << cleared.out;
  const auto verify = run_cli({"verify"}, env());
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  const auto stats = run_cli({"stats", "--json"}, env());
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(build_all(), std::vector<std::string>(k_sources.size(), "miss"));
  EXPECT_EQ(build_all(), std::vector<std::string>(k_sources.size(), "hit"));
}

TEST_F(DamagedCache, PruneEndsCleanlyAndTheNextBuildsRecover) {
  build_all();
  overwrite_middle_third();
  const auto pruned = run_cli({"prune", "--max-size", "100K"}, env());
  EXPECT_LT(pruned.exit_code, 128) << pruned.err; // an error or a quarantine, never a signal
  build_all();
  build_all();
  EXPECT_EQ(build_all(), std::vector<std::string>(k_sources.size(), "hit")) << last_err;
}

} // namespace
} // namespace jitcache
