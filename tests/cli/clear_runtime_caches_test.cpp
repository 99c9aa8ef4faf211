// `jitcache clear --runtime-caches`: lists the runtimes' and bindings' caches where their own
// variables (or HOME and XDG_CACHE_HOME) put them, and removes those and nothing else.
#include "tests/support/files.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

namespace jitcache {
namespace {
using test::write_file;

namespace fs = std::filesystem;
using test::run_cli;

class ClearRuntimeCachesTest : public ::testing::Test {
protected:
  void SetUp() override {
    // PoCL, the CUDA driver and CuPy by their own variables; PyOpenCL, pytools and comgr
    // (its variable empty, so unset) under XDG_CACHE_HOME.
    write_file(home() / "pocl" / "ab" / "program.bc", std::string(1000, 'p'));
    write_file(home() / "nv" / "ComputeCache" / "index", std::string(200, 'n'));
    write_file(home() / "cupy" / "kernel.cubin", std::string(300, 'c'));
    write_file(xdg() / "pyopencl" / "pyopencl-compiler-cache-v2-py3" / "k" / "binary",
               std::string(400, 'o'));
    write_file(xdg() / "pytools" / "pdict-v4-x" / "entry", std::string(50, 't'));
    // Things that must survive: jitcache's own cache, a neighbour in XDG_CACHE_HOME, and a
    // victim outside reached through links planted inside two of the caches.
    write_file(home() / "jitcache" / "v1" / "keep", "jitcache");
    write_file(xdg() / "neighbour" / "keep", "neighbour");
    write_file(outside.path() / "victim" / "precious", "precious");
    fs::create_directory_symlink(outside.path() / "victim", home() / "pocl" / "ab" / "link");
    fs::create_symlink(outside.path() / "victim" / "precious", xdg() / "pytools" / "file_link");
  }

  fs::path home() const { return scratch.path(); }
  fs::path xdg() const { return scratch.path() / "xdg"; }

  std::map<std::string, std::string> env() const {
    return {{"HOME", home().string()},
            {"XDG_CACHE_HOME", xdg().string()},
            {"JITCACHE_DIR", (home() / "jitcache").string()},
            {"POCL_CACHE_DIR", (home() / "pocl").string()},
            {"CUDA_CACHE_PATH", (home() / "nv").string()},
            {"CUPY_CACHE_DIR", (home() / "cupy").string()},
            {"AMD_COMGR_CACHE_DIR", ""}};
  }

  std::map<std::string, nlohmann::json> run(const std::vector<std::string>& flags, int& status) {
    std::vector<std::string> args{"clear", "--runtime-caches", "--json"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto r = run_cli(args, env());
    status = r.exit_code;
    EXPECT_TRUE(r.err.empty()) << r.err;
    std::map<std::string, nlohmann::json> lines;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      lines[j["name"].get<std::string>()] = j;
    }
    return lines;
  }

  test::TempDir scratch;
  test::TempDir outside;
};

TEST_F(ClearRuntimeCachesTest, DryRunListsEveryCacheWithItsSizeAndDeletesNothing) {
  int status = -1;
  auto lines = run({"--dry-run"}, status);
  EXPECT_EQ(status, 0);
  ASSERT_EQ(lines.size(), 6u);
  const std::map<std::string, std::pair<fs::path, std::uint64_t>> expected = {
      {"pocl", {home() / "pocl", 1000}},    {"cuda-driver", {home() / "nv", 200}},
      {"cupy", {home() / "cupy", 300}},     {"pyopencl", {xdg() / "pyopencl", 400}},
      {"pytools", {xdg() / "pytools", 50}},
  };
  for (const auto& [name, where] : expected) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(lines.count(name));
    EXPECT_EQ(lines[name]["dir"], where.first.string());
    EXPECT_EQ(lines[name]["present"], true);
    EXPECT_EQ(lines[name]["bytes"], where.second); // the links are not followed
    EXPECT_EQ(lines[name]["files"], 1);
    EXPECT_EQ(lines[name]["removed"], false);
    EXPECT_TRUE(fs::exists(where.first));
  }
  EXPECT_EQ(lines["pocl"]["variable"], "POCL_CACHE_DIR");
  EXPECT_EQ(lines["pyopencl"]["variable"], "XDG_CACHE_HOME");
  EXPECT_EQ(lines["comgr"]["dir"], (xdg() / "comgr").string());
  EXPECT_EQ(lines["comgr"]["present"], false);
  EXPECT_TRUE(fs::exists(home() / "pocl" / "ab" / "program.bc"));
}

TEST_F(ClearRuntimeCachesTest, RemovesThoseCachesOnlyAndNeverFollowsALink) {
  int status = -1;
  auto lines = run({}, status);
  EXPECT_EQ(status, 0);
  for (const char* name : {"pocl", "cuda-driver", "cupy", "pyopencl", "pytools"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(lines[name]["removed"], true);
    EXPECT_FALSE(fs::exists(fs::symlink_status(lines[name]["dir"].get<std::string>())));
  }
  EXPECT_EQ(lines["comgr"]["removed"], false);
  EXPECT_TRUE(fs::exists(outside.path() / "victim" / "precious"));
  EXPECT_TRUE(fs::exists(home() / "jitcache" / "v1" / "keep"));
  EXPECT_TRUE(fs::exists(xdg() / "neighbour" / "keep"));

  // Run again: everything is absent now, nothing fails.
  lines = run({}, status);
  EXPECT_EQ(status, 0);
  for (const auto& [name, line] : lines)
    EXPECT_EQ(line["present"], false) << name;
}

TEST_F(ClearRuntimeCachesTest, ACacheDirThatIsALinkIsRemovedAsALink) {
  fs::remove_all(home() / "cupy");
  fs::create_directory_symlink(outside.path() / "victim", home() / "cupy");
  int status = -1;
  auto lines = run({}, status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(lines["cupy"]["removed"], true);
  EXPECT_FALSE(fs::exists(fs::symlink_status(home() / "cupy")));
  EXPECT_TRUE(fs::exists(outside.path() / "victim" / "precious"));
}

TEST_F(ClearRuntimeCachesTest, RefusesADirectoryThatHoldsMoreThanACache) {
  auto e = env();
  e["CUPY_CACHE_DIR"] = home().string();
  auto r = run_cli({"clear", "--runtime-caches", "--json"}, e);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("not removed: $HOME itself"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(home() / "jitcache" / "v1" / "keep"));
}

TEST_F(ClearRuntimeCachesTest, DryRunWithoutRuntimeCachesIsABadFlag) {
  auto r = run_cli({"clear", "--dry-run"}, env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--runtime-caches"), std::string::npos) << r.err;
}

} // namespace
} // namespace jitcache
