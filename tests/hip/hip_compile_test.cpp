// Compile-only HIP through the cache with the real hipRTC: no GPU needed.
#include "tests/hip/hip_test_support.hpp"

#include <iterator>
#include <set>
#include <thread>

namespace jitcache {
namespace {

using test::FreshCache;
using test::hip_kernel;

TEST(HipCompile, ThreeTargetsGiveThreeKeysThreeEntriesThreeCodeObjects) {
  FreshCache fresh;
  const hip::Program saxpy = hip_kernel("saxpy.hip");
  struct Target {
    const char* name;
    unsigned mach; // EF_AMDGPU_MACH_AMDGCN_*
  };
  const Target targets[] = {{"gfx906", 0x2f}, {"gfx90a", 0x3f}, {"gfx1030", 0x36}};
  std::set<std::string> keys;
  for (const Target& target : targets) {
    auto code = hip::compile(*fresh.cache, target.name, saxpy);
    ASSERT_TRUE(code) << code.error().message;
    EXPECT_EQ(code->info.outcome, Outcome::miss);
    EXPECT_EQ(code->info.tier, "compile");
    EXPECT_EQ(code->info.device, target.name);
    EXPECT_EQ(code->info.bytes, code->code.size());
    EXPECT_GT(code->info.compile_ms, 0);
    test::expect_code_object(code->code, target.name, target.mach);
    keys.insert(code->info.key.hex());
  }
  EXPECT_EQ(keys.size(), 3u);
  EXPECT_EQ(fresh.hip_entries(), 3);
  const Stats stats = fresh.cache->session_stats();
  EXPECT_EQ(stats.get("hip", Counter::misses), 3u);
  EXPECT_EQ(stats.get("hip", Counter::compiles), 3u);
  EXPECT_EQ(stats.hits("hip"), 0u);
}

TEST(HipCompile, HitsFromMemoryThenFromTheUserTierOfANewCache) {
  FreshCache fresh;
  const hip::Program reduce = hip_kernel("reduce.hip");
  auto first = hip::compile(*fresh.cache, "gfx90a", reduce);
  ASSERT_TRUE(first) << first.error().message;
  auto again = hip::compile(*fresh.cache, "gfx90a", reduce);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->info.outcome, Outcome::hit);
  EXPECT_EQ(again->info.tier, "memory");
  EXPECT_EQ(again->code, first->code);

  Cache& reopened = fresh.reopen();
  auto stored = hip::compile(reopened, "gfx90a", reduce);
  ASSERT_TRUE(stored) << stored.error().message;
  EXPECT_EQ(stored->info.outcome, Outcome::hit);
  EXPECT_EQ(stored->info.tier, "user");
  EXPECT_EQ(stored->info.compile_ms, 0);
  EXPECT_EQ(stored->code, first->code);
  EXPECT_EQ(reopened.session_stats().hits("hip", "user"), 1u);
  EXPECT_EQ(reopened.session_stats().get("hip", Counter::compiles), 0u);
}

TEST(HipCompile, ConcurrentRequestsCompileEachKeyOnce) {
  FreshCache fresh;
  const hip::Program saxpy = hip_kernel("saxpy.hip");
  const char* targets[] = {"gfx90a", "gfx90a", "gfx90a",  "gfx90a",
                           "gfx906", "gfx908", "gfx1030", "gfx1031"};
  std::vector<std::string> codes(std::size(targets));
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < std::size(targets); ++i)
    threads.emplace_back([&, i] {
      auto code = hip::compile(*fresh.cache, targets[i], saxpy);
      EXPECT_TRUE(code) << code.error().message;
      if (code)
        codes[i] = code->code;
    });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(codes[1], codes[0]);
  EXPECT_EQ(codes[3], codes[0]);
  test::expect_code_object(codes[6], "gfx1030", 0x36);
  EXPECT_EQ(fresh.cache->session_stats().get("hip", Counter::compiles), 5u);
  EXPECT_EQ(fresh.hip_entries(), 5);
}

TEST(HipCompile, CompileErrorGivesTheLogAndStoresNothing) {
  FreshCache fresh;
  hip::Program broken;
  broken.name = "broken.hip";
  broken.source = "extern \"C\" __global__ void k(int* a) { a[0] = undefined_thing; }\n";
  auto code = hip::compile(*fresh.cache, "gfx90a", broken);
  ASSERT_FALSE(code);
  EXPECT_EQ(code.error().code, ErrorCode::compile_failed);
  EXPECT_NE(code.error().message.find("hiprtcCompileProgram"), std::string::npos)
      << code.error().message;
  EXPECT_NE(code.error().message.find("broken.hip"), std::string::npos) << code.error().message;
  EXPECT_NE(code.error().log.find("undefined_thing"), std::string::npos) << code.error().log;
  EXPECT_EQ(fresh.hip_entries(), 0);
  EXPECT_EQ(fresh.cache->session_stats().get("hip", Counter::compile_errors), 1u);
  EXPECT_EQ(fresh.cache->session_stats().get("hip", Counter::compiles), 0u);
}

TEST(HipCompile, UnknownOptionIsACompileErrorWithTheLog) {
  FreshCache fresh;
  hip::Program saxpy = hip_kernel("saxpy.hip");
  saxpy.options = {"--no-such-flag"};
  auto code = hip::compile(*fresh.cache, "gfx90a", saxpy);
  ASSERT_FALSE(code);
  EXPECT_EQ(code.error().code, ErrorCode::compile_failed);
  EXPECT_NE(code.error().log.find("--no-such-flag"), std::string::npos) << code.error().log;
  EXPECT_EQ(fresh.hip_entries(), 0);
}

TEST(HipCompile, EveryKeyFieldChangesTheKey) {
  hip::Program base = hip_kernel("reduce.hip");
  base.headers = {{"params.h", "#define REDUCE_BLOCK 128\n"}};
  base.source = "#include \"params.h\"\n" + base.source;
  const Config config = Config::from_variables({});
  auto key = [&](const std::string& target, const hip::Program& program) {
    auto k = hip::make_key(config, program, target);
    EXPECT_TRUE(k) << k.error().message;
    return k ? k->digest.hex() : std::string();
  };
  const std::string reference = key("gfx90a", base);
  EXPECT_EQ(key("gfx90a", base), reference) << "keys are deterministic";

  hip::Program header = base;
  header.headers[0].content = "#define REDUCE_BLOCK 256\n";
  EXPECT_NE(key("gfx90a", header), reference) << "in-memory header content";
  hip::Program options = base;
  options.options = {"-O2"};
  EXPECT_NE(key("gfx90a", options), reference) << "options";
  hip::Program spaced = base;
  spaced.options = {" -O2"};
  EXPECT_NE(key("gfx90a", spaced), key("gfx90a", options)) << "options exactly as given";
  hip::Program split = base;
  split.options = {"-DA", "-O2"};
  hip::Program joined = base;
  joined.options = {"-DA -O2"};
  EXPECT_NE(key("gfx90a", split), key("gfx90a", joined)) << "option boundaries";
  hip::Program expressions = base;
  expressions.name_expressions = {"reduce_sum"};
  EXPECT_NE(key("gfx90a", expressions), reference) << "name expressions";
  hip::Program text = base;
  text.source += "\n";
  EXPECT_NE(key("gfx90a", text), reference) << "source";
  EXPECT_NE(key("gfx906", base), reference) << "target";
  EXPECT_NE(key("gfx90a:xnack+", base), reference) << "target features";
  EXPECT_EQ(key("gfx90a:xnack-:sramecc+", base), key("gfx90a:sramecc+:xnack-", base))
      << "feature order is not part of the target";
}

TEST(HipCompile, AHeaderFileFoundThroughDashIChangesTheKey) {
  test::TempDir include;
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(include.path() / name) << text;
  };
  write("tile.h", "#define TILE 32\n");
  write("unused.h", "#define UNUSED 1\n");
  hip::Program source;
  source.name = "tiled.hip";
  source.source = "#include \"tile.h\"\n"
                  "extern \"C\" __global__ void k(float* a) { a[threadIdx.x % TILE] = 1.0f; }\n";
  source.options = {"-I", include.path().string()};

  FreshCache fresh;
  auto first = hip::compile(*fresh.cache, "gfx90a", source);
  ASSERT_TRUE(first) << first.error().message << "\n" << first.error().log;
  write("unused.h", "#define UNUSED 2\n");
  auto same = hip::make_key(fresh.cache->config(), source, "gfx90a");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->digest, first->info.key) << "a header the source does not include";
  hip::Program joined = source;
  joined.options = {"-I" + include.path().string()};
  auto same_joined = hip::make_key(fresh.cache->config(), joined, "gfx90a");
  ASSERT_TRUE(same_joined);
  EXPECT_EQ(same_joined->digest, first->info.key) << "-I dir and -Idir are one option";

  // The directory counts by what it provides, not by where it is.
  test::TempDir moved;
  std::filesystem::copy(include.path(), moved.path(), std::filesystem::copy_options::recursive);
  hip::Program elsewhere = source;
  elsewhere.options = {"-I", moved.path().string()};
  auto moved_key = hip::make_key(fresh.cache->config(), elsewhere, "gfx90a");
  ASSERT_TRUE(moved_key);
  EXPECT_EQ(moved_key->digest, first->info.key) << "a moved include directory";

  write("tile.h", "#define TILE 64\n");
  auto changed = hip::compile(*fresh.cache, "gfx90a", source);
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_NE(changed->info.key, first->info.key);
  EXPECT_EQ(changed->info.outcome, Outcome::miss);
}

TEST(HipCompile, LoweredNamesOfATemplatedKernelAreStoredWithTheEntry) {
  FreshCache fresh;
  hip::Program axpy = hip_kernel("axpy_template.hip");
  axpy.name_expressions = {"axpy<float>", "axpy<double>"};
  auto compiled = hip::compile(*fresh.cache, "gfx1030", axpy);
  ASSERT_TRUE(compiled) << compiled.error().message << "\n" << compiled.error().log;
  ASSERT_EQ(compiled->lowered_names.size(), 2u);
  const std::string single = compiled->lowered_names["axpy<float>"];
  const std::string twin = compiled->lowered_names["axpy<double>"];
  EXPECT_EQ(single.rfind("_Z4axpyIf", 0), 0u) << single;
  EXPECT_EQ(twin.rfind("_Z4axpyId", 0), 0u) << twin;
  for (const std::string& symbol : {single, twin})
    EXPECT_NE(compiled->code.find(symbol), std::string::npos) << symbol;

  Cache& reopened = fresh.reopen();
  auto stored = hip::compile(reopened, "gfx1030", axpy);
  ASSERT_TRUE(stored) << stored.error().message;
  EXPECT_EQ(stored->info.tier, "user");
  EXPECT_EQ(stored->lowered_names, compiled->lowered_names);
}

// A stored entry whose bytes verify (right checksum, right key) but whose code object is for
// another GPU: what a runtime would refuse. It is evicted, counted, and compiled again.
TEST(HipCompile, AStoredCodeObjectForAnotherTargetIsRejectedAndRecompiled) {
  FreshCache fresh;
  const hip::Program saxpy = hip_kernel("saxpy.hip");
  auto wrong = hip::compile(*fresh.cache, "gfx906", saxpy);
  ASSERT_TRUE(wrong) << wrong.error().message;
  auto key = hip::make_key(fresh.cache->config(), saxpy, "gfx90a");
  ASSERT_TRUE(key) << key.error().message;
  Entry misfiled;
  misfiled.backend = "hip";
  misfiled.payload = wrong->code;
  fresh.cache->store(*key, misfiled);

  Cache& reopened = fresh.reopen();
  auto code = hip::compile(reopened, "gfx90a", saxpy);
  ASSERT_TRUE(code) << code.error().message;
  EXPECT_EQ(code->info.outcome, Outcome::miss);
  EXPECT_NE(code->info.note.find("rejected"), std::string::npos) << code->info.note;
  EXPECT_NE(code->info.note.find("gfx906"), std::string::npos) << code->info.note;
  test::expect_code_object(code->code, "gfx90a", 0x3f);
  EXPECT_EQ(reopened.session_stats().get("hip", Counter::rejected), 1u);
  EXPECT_EQ(reopened.session_stats().get("hip", Counter::compiles), 1u);

  // The replacement is what the next process finds.
  Cache& third = fresh.reopen();
  auto again = hip::compile(third, "gfx90a", saxpy);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->info.tier, "user");
  EXPECT_EQ(again->code, code->code);
  EXPECT_EQ(third.session_stats().get("hip", Counter::rejected), 0u);
}

// With JITCACHE_READONLY the misfiled entry cannot be evicted: the compile goes around it, and
// the wrong code object is still never handed out.
TEST(HipCompile, AStoredCodeObjectThatCannotBeEvictedIsCompiledAround) {
  FreshCache fresh;
  const hip::Program saxpy = hip_kernel("saxpy.hip");
  auto wrong = hip::compile(*fresh.cache, "gfx906", saxpy);
  ASSERT_TRUE(wrong) << wrong.error().message;
  auto key = hip::make_key(fresh.cache->config(), saxpy, "gfx90a");
  ASSERT_TRUE(key) << key.error().message;
  Entry misfiled;
  misfiled.backend = "hip";
  misfiled.payload = wrong->code;
  fresh.cache->store(*key, misfiled);
  fresh.cache.reset();

  Cache read_only(Config::from_variables(
      {{"JITCACHE_DIR", fresh.dir.path().string()}, {"JITCACHE_READONLY", "1"}}));
  auto code = hip::compile(read_only, "gfx90a", saxpy);
  ASSERT_TRUE(code) << code.error().message;
  EXPECT_EQ(code->info.outcome, Outcome::miss);
  EXPECT_NE(code->info.note.find("rejected"), std::string::npos) << code->info.note;
  test::expect_code_object(code->code, "gfx90a", 0x3f);
  // The compiled code object is kept in the memory tier, which a read-only cache still has.
  auto again = hip::compile(read_only, "gfx90a", saxpy);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->info.tier, "memory");
  test::expect_code_object(again->code, "gfx90a", 0x3f);
  EXPECT_EQ(read_only.session_stats().get("hip", Counter::rejected), 1u);
  // A new process finds the misfiled one again: the read-only tier was not written.
  Cache next(Config::from_variables(
      {{"JITCACHE_DIR", fresh.dir.path().string()}, {"JITCACHE_READONLY", "1"}}));
  auto third = hip::compile(next, "gfx90a", saxpy);
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third->info.outcome, Outcome::miss);
  EXPECT_EQ(next.session_stats().get("hip", Counter::rejected), 1u);
}

TEST(HipCompile, BadRequestsAreRefusedBeforeCompiling) {
  FreshCache fresh;
  hip::Program empty;
  auto code = hip::compile(*fresh.cache, "gfx90a", empty);
  ASSERT_FALSE(code);
  EXPECT_EQ(code.error().code, ErrorCode::invalid_argument);

  hip::Program saxpy = hip_kernel("saxpy.hip");
  using Options = std::vector<std::string>;
  for (const Options& options :
       {Options{"-O3", "--offload-arch=gfx1100"}, // would abort hipRTC 5.2
        Options{"--offload-arch", "gfx90a"}, Options{"--gpu-architecture=gfx90a"},
        Options{"--cuda-gpu-arch=gfx90a"}}) {
    saxpy.options = options;
    code = hip::compile(*fresh.cache, "gfx90a", saxpy);
    ASSERT_FALSE(code) << options[0];
    EXPECT_EQ(code.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(code.error().message.find(options.back() == "gfx90a" ? options[0] : options.back()),
              std::string::npos)
        << code.error().message;
  }
  EXPECT_EQ(fresh.cache->session_stats().get("hip", Counter::compile_errors), 0u);
}

} // namespace
} // namespace jitcache
