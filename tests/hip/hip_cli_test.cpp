// `jitcache build --backend hip` in fresh processes: the CLI contract of DESIGN.md.
#include "tests/hip/hip_test_support.hpp"

#include "backends/hip/hip_api.hpp"
#include "tests/support/process.hpp"

#include <nlohmann/json.hpp>

namespace jitcache {
namespace {

const std::string k_saxpy = std::string(JITCACHE_KERNELS) + "/saxpy.hip";

nlohmann::json build(const std::vector<std::string>& args, const test::TempDir& dir) {
  std::vector<std::string> argv = {"build", "--backend", "hip", "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto result = test::run_cli(argv, {{"JITCACHE_DIR", dir.path().string()}});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.exit_code == 0 ? nlohmann::json::parse(result.out) : nlohmann::json();
}

TEST(HipCli, MissThenHitInANewProcess) {
  test::TempDir dir;
  const auto first = build({"--arch", "gfx90a", k_saxpy}, dir);
  ASSERT_FALSE(first.is_null());
  EXPECT_EQ(first["outcome"], "miss");
  EXPECT_EQ(first["tier"], "compile");
  EXPECT_EQ(first["backend"], "hip");
  EXPECT_EQ(first["device"], "gfx90a");
  EXPECT_GT(first["bytes"].get<int>(), 0);

  const auto second = build({"--arch", "gfx90a", k_saxpy}, dir);
  ASSERT_FALSE(second.is_null());
  EXPECT_EQ(second["outcome"], "hit");
  EXPECT_EQ(second["tier"], "user");
  EXPECT_EQ(second["key"], first["key"]);
  EXPECT_EQ(second["bytes"], first["bytes"]);
  EXPECT_EQ(second["compile_ms"], 0.0);
}

TEST(HipCli, TheSameFileByAnotherPathIsAHit) {
  test::TempDir dir;
  const auto first = build({"--arch", "gfx1030", k_saxpy}, dir);
  const auto second =
      build({"--arch", "gfx1030", std::string(JITCACHE_KERNELS) + "/../kernels/./saxpy.hip"}, dir);
  ASSERT_FALSE(second.is_null());
  EXPECT_EQ(second["outcome"], "hit");
  EXPECT_EQ(second["key"], first["key"]);
}

TEST(HipCli, CompileErrorPrintsTheLogAndExitsOne) {
  test::TempDir dir;
  const auto file = dir.path() / "broken.hip";
  std::ofstream(file) << "extern \"C\" __global__ void k(int* a) { a[0] = undefined_thing; }\n";
  const auto result =
      test::run_cli({"build", "--backend", "hip", "--arch", "gfx90a", file.string()},
                    {{"JITCACHE_DIR", (dir.path() / "cache").string()}});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("hiprtcCompileProgram"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("undefined_thing"), std::string::npos) << result.err;
}

TEST(HipCli, UnknownTargetIsAOneLineErrorNotACrash) {
  test::TempDir dir;
  const auto result = test::run_cli({"build", "--backend", "hip", "--arch", "gfx1100", k_saxpy},
                                    {{"JITCACHE_DIR", dir.path().string()}});
  EXPECT_EQ(result.exit_code, 1) << "signal or crash: " << result.err;
  EXPECT_NE(result.err.find("gfx1100"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("gfx90a"), std::string::npos) << result.err;
}

TEST(HipCli, BuildingForTheDeviceWithoutAGpuNamesTheHipError) {
  if (hip::device_count())
    GTEST_SKIP() << "an AMD GPU is present";
  test::TempDir dir;
  const auto result = test::run_cli({"build", "--backend", "hip", k_saxpy},
                                    {{"JITCACHE_DIR", dir.path().string()}});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("hipGetDeviceCount"), std::string::npos) << result.err;
}

} // namespace
} // namespace jitcache
