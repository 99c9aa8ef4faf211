// The CUDA backend without a GPU: real NVRTC compiles for targets that need not be present.
#include "tests/cuda/cuda_test_support.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <thread>

namespace jitcache {
namespace {

using test::kernel_program;
using test::TempDir;
using test::user_entries;

Config config_in(const TempDir& dir) {
  return Config::from_variables({{"JITCACHE_DIR", dir.path().string()}});
}

TEST(CudaCompile, ThreeArchitecturesGiveThreeKeysAndValidCubins) {
  TempDir dir;
  Cache cache(config_in(dir));
  const cuda::Program program = kernel_program("saxpy.cu");
  std::set<Digest> keys;
  for (const auto& [arch, sm] : {std::pair{"sm_75", 75}, {"sm_80", 80}, {"sm_90", 90}}) {
    auto binary = cuda::compile(cache, arch, program);
    ASSERT_TRUE(binary) << binary.error().message << "\n" << binary.error().log;
    EXPECT_EQ(binary->info.outcome, Outcome::miss);
    EXPECT_EQ(binary->info.tier, "compile");
    EXPECT_EQ(binary->info.device, arch);
    EXPECT_GT(binary->info.compile_ms, 0);
    EXPECT_EQ(binary->info.bytes, binary->cubin.size());
    EXPECT_EQ(binary->target, arch);
    EXPECT_EQ(test::cubin_sm(binary->cubin), sm) << arch;
    keys.insert(binary->info.key);
  }
  EXPECT_EQ(keys.size(), 3u);
  cache.flush();
  EXPECT_EQ(user_entries(cache), 3u);
  const Stats stats = cache.session_stats();
  EXPECT_EQ(stats.get("cuda", Counter::compiles), 3u);
  EXPECT_EQ(stats.get("cuda", Counter::misses), 3u);
  EXPECT_EQ(stats.hits("cuda"), 0u);
}

TEST(CudaCompile, AnArchitectureNvrtcCannotTargetNamesTheOnesItCan) {
  TempDir dir;
  Cache cache(config_in(dir));
  auto binary = cuda::compile(cache, "sm_70", kernel_program("saxpy.cu"));
  ASSERT_FALSE(binary);
  EXPECT_EQ(binary.error().code, ErrorCode::unsupported);
  EXPECT_NE(binary.error().message.find("sm_70"), std::string::npos) << binary.error().message;
  EXPECT_NE(binary.error().message.find("sm_80"), std::string::npos) << binary.error().message;
  EXPECT_EQ(user_entries(cache), 0u);

  auto malformed = cuda::compile(cache, "volta", kernel_program("saxpy.cu"));
  ASSERT_FALSE(malformed);
  EXPECT_EQ(malformed.error().code, ErrorCode::invalid_argument);
}

TEST(CudaCompile, ACompileErrorGivesTheLogAndStoresNothing) {
  TempDir dir;
  Cache cache(config_in(dir));
  cuda::Program program;
  program.name = "broken.cu";
  program.source = "extern \"C\" __global__ void broken(float* x) { x[0] = undeclared_name; }\n";
  auto binary = cuda::compile(cache, "sm_80", program);
  ASSERT_FALSE(binary);
  EXPECT_EQ(binary.error().code, ErrorCode::compile_failed);
  EXPECT_NE(binary.error().message.find("nvrtcCompileProgram"), std::string::npos);
  EXPECT_NE(binary.error().log.find("undeclared_name"), std::string::npos) << binary.error().log;
  cache.flush();
  EXPECT_EQ(user_entries(cache), 0u);
  EXPECT_EQ(cache.session_stats().get("cuda", Counter::compile_errors), 1u);
}

TEST(CudaCompile, AnArchOptionIsRefused) {
  TempDir dir;
  Cache cache(config_in(dir));
  cuda::Program program = kernel_program("saxpy.cu");
  program.options = {"-arch=sm_80"};
  auto binary = cuda::compile(cache, "sm_80", program);
  ASSERT_FALSE(binary);
  EXPECT_EQ(binary.error().code, ErrorCode::invalid_argument);
}

TEST(CudaCompile, HeaderContentIsPartOfTheKey) {
  TempDir dir;
  // A header in memory.
  cuda::Program program;
  program.name = "uses_header.cu";
  program.source = "#include \"value.cuh\"\n"
                   "extern \"C\" __global__ void k(int* x) { x[0] = VALUE; }\n";
  program.headers = {{"value.cuh", "#define VALUE 1\n"}};
  auto before = cuda::make_key(Config(), program, "sm_80");
  program.headers[0].content = "#define VALUE 2\n";
  auto after = cuda::make_key(Config(), program, "sm_80");
  ASSERT_TRUE(before && after);
  EXPECT_NE(before->digest, after->digest);

  // A header file found through -I.
  const auto include = dir.path() / "include";
  std::filesystem::create_directories(include);
  std::ofstream(include / "value.cuh") << "#define VALUE 1\n";
  program.headers.clear();
  program.options = {"-I" + include.string()};
  auto file_before = cuda::make_key(Config(), program, "sm_80");
  std::ofstream(include / "value.cuh") << "#define VALUE 3\n";
  auto file_after = cuda::make_key(Config(), program, "sm_80");
  ASSERT_TRUE(file_before && file_after);
  EXPECT_NE(file_before->digest, file_after->digest);
  bool listed = false;
  for (const KeyField& field : all_fields(*file_after))
    listed |= field.section == KeySection::header && field.value == "#define VALUE 3\n";
  EXPECT_TRUE(listed);

  // A toolkit header (CUB) counts by content too.
  auto cub = cuda::make_key(Config(), kernel_program("block_reduce.cu"), "sm_80");
  ASSERT_TRUE(cub);
  bool has_cub = false;
  for (const KeyField& field : all_fields(*cub))
    has_cub |= field.section == KeySection::header &&
               field.name.find("block_reduce.cuh") != std::string::npos;
  EXPECT_TRUE(has_cub);
}

TEST(CudaCompile, OptionsAreKeyedOneByOne) {
  cuda::Program program = kernel_program("saxpy.cu");
  program.options = {"-DA=1 -DB=2"};
  auto joined = cuda::make_key(Config(), program, "sm_80");
  program.options = {"-DA=1", "-DB=2"};
  auto split = cuda::make_key(Config(), program, "sm_80");
  ASSERT_TRUE(joined && split);
  EXPECT_NE(joined->digest, split->digest);
}

TEST(CudaCompile, NameExpressionsRoundTripThroughAHit) {
  TempDir dir;
  const cuda::Program program = kernel_program("scale.cu", {"scale<float, 4>", "scale<double, 2>"});
  std::map<std::string, std::string> lowered;
  {
    Cache cache(config_in(dir));
    auto binary = cuda::compile(cache, "sm_80", program);
    ASSERT_TRUE(binary) << binary.error().message << "\n" << binary.error().log;
    EXPECT_EQ(binary->info.outcome, Outcome::miss);
    lowered = binary->lowered_names;
  }
  ASSERT_EQ(lowered.size(), 2u);
  EXPECT_NE(lowered["scale<float, 4>"].find("scale"), std::string::npos);
  Cache cache(config_in(dir));
  auto binary = cuda::compile(cache, "sm_80", program);
  ASSERT_TRUE(binary) << binary.error().message;
  EXPECT_EQ(binary->info.outcome, Outcome::hit);
  EXPECT_EQ(binary->info.tier, "user");
  EXPECT_EQ(binary->lowered_names, lowered);
  EXPECT_EQ(cache.session_stats().hits("cuda", "user"), 1u);
  EXPECT_EQ(cache.session_stats().get("cuda", Counter::compiles), 0u);
}

TEST(CudaCompile, ConcurrentRequestsForOneKernelCompileOnce) {
  TempDir dir;
  Cache cache(config_in(dir));
  const cuda::Program same = kernel_program("saxpy.cu");
  const cuda::Program other = kernel_program("scale.cu", {"scale<float, 4>"});
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back(
        [&, i] { failures += !cuda::compile(cache, "sm_80", i % 2 ? same : other); });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(failures, 0);
  const Stats stats = cache.session_stats();
  EXPECT_EQ(stats.get("cuda", Counter::compiles), 2u);
  EXPECT_EQ(stats.hits("cuda"), 6u);
}

TEST(CudaCompile, AStoredEntryThatIsNoCubinIsRebuilt) {
  TempDir dir;
  const cuda::Program program = kernel_program("saxpy.cu");
  Digest key;
  {
    Cache cache(config_in(dir));
    auto binary = cuda::compile(cache, "sm_80", program);
    ASSERT_TRUE(binary);
    key = binary->info.key;
  }
  Cache cache(config_in(dir));
  for (const auto& tier : cache.tiers()) {
    if (tier->name() == "user") {
      auto stored = tier->get(key);
      ASSERT_TRUE(stored && *stored);
      Entry garbage = **stored; // the same key fields, so that the lookup accepts it
      garbage.payload = "garbage";
      garbage.metadata = "garbage";
      ASSERT_TRUE(tier->put(key, garbage));
    }
  }
  auto binary = cuda::compile(cache, "sm_80", program);
  ASSERT_TRUE(binary) << binary.error().message;
  EXPECT_EQ(test::cubin_sm(binary->cubin), 80);
  EXPECT_FALSE(binary->info.note.empty());
  EXPECT_EQ(cache.session_stats().get("cuda", Counter::rejected), 1u);
  EXPECT_EQ(cache.session_stats().get("cuda", Counter::compiles), 1u);
}

TEST(CudaCompile, ARefusedEntryThatAReadOnlyCacheCannotEvictIsBypassed) {
  TempDir dir;
  const cuda::Program program = kernel_program("saxpy.cu");
  {
    Cache cache(config_in(dir));
    auto key = cuda::make_key(Config(), program, "sm_80");
    ASSERT_TRUE(key);
    cache.store(*key, Entry{"cuda", "garbage", "garbage", 1});
    cache.flush();
  }
  Cache cache(
      Config::from_variables({{"JITCACHE_DIR", dir.path().string()}, {"JITCACHE_READONLY", "1"}}));
  auto binary = cuda::compile(cache, "sm_80", program);
  ASSERT_TRUE(binary) << binary.error().message;
  EXPECT_EQ(test::cubin_sm(binary->cubin), 80);
  EXPECT_EQ(binary->info.outcome, Outcome::miss);
  // The compiled cubin is kept in the memory tier, which a read-only cache still has.
  auto again = cuda::compile(cache, "sm_80", program);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->info.tier, "memory");
  EXPECT_EQ(test::cubin_sm(again->cubin), 80);
  EXPECT_EQ(cache.session_stats().get("cuda", Counter::rejected), 1u);
}

TEST(CudaCompile, TheCliCompilesForAnArchitectureWithoutADevice) {
  TempDir dir;
  const std::map<std::string, std::string> env = {{"JITCACHE_DIR", dir.path().string()}};
  const std::string file = std::string(JITCACHE_KERNELS) + "/saxpy.cu";
  for (const char* outcome : {"miss", "hit"}) {
    auto run =
        test::run_cli({"build", "--backend", "cuda", "--arch", "sm_80", "--json", file}, env);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto line = nlohmann::json::parse(run.out);
    EXPECT_EQ(line["outcome"], outcome);
    EXPECT_EQ(line["backend"], "cuda");
    EXPECT_GT(line["bytes"].get<int>(), 0);
  }
  auto bad = test::run_cli({"build", "--backend", "cuda", "--arch", "sm_70", file}, env);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("sm_75"), std::string::npos) << bad.err;
}

TEST(CudaCompile, LoadingWithoutADriverIsAClearError) {
  if (cuda::driver())
    GTEST_SKIP() << "a CUDA driver is installed";
  TempDir dir;
  Cache cache(config_in(dir));
  auto module = cuda::load_module(cache, kernel_program("saxpy.cu"));
  ASSERT_FALSE(module);
  if (module.error().code == ErrorCode::runtime_missing)
    EXPECT_NE(module.error().message.find("libcuda.so.1"), std::string::npos)
        << module.error().message;
  else
    EXPECT_EQ(module.error().code, ErrorCode::no_device) << module.error().message;
}

} // namespace
} // namespace jitcache
