// Target selection from a compute capability or an arch name, against NVRTC's list of targets;
// NVRTC's identity and keys remembered in the user tier.
#include "backends/cuda/cuda_key.hpp"
#include "backends/cuda/cuda_runtime.hpp"
#include "core/engine/cache_core.hpp"
#include "core/engine/pipeline.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/packages/package_format.hpp"
#include "tests/cuda/cuda_test_support.hpp"
#include "tests/support/open_count.hpp"
#include "tests/support/stamp_clock.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

namespace jitcache::cuda {

using detail::encode_entry;
namespace {

namespace fs = std::filesystem;

const Toolchain k_nvrtc{"13.0", "libnvrtc.so.13, 1 bytes", {75, 80, 86, 89, 90, 100, 120, 121}};

// A stand-in NVRTC for what the real one cannot be made to answer: a count of archs (zero, or
// negative), or a failing call. Its list call refuses a null buffer, as NVRTC does.
int g_stand_in_count = 0;
nvrtcResult stand_in_version(int* major, int* minor) {
  *major = 13;
  *minor = 0;
  return NVRTC_SUCCESS;
}
nvrtcResult stand_in_count(int* count) {
  *count = g_stand_in_count;
  return g_stand_in_count == 99 ? NVRTC_ERROR_INTERNAL_ERROR : NVRTC_SUCCESS;
}
nvrtcResult stand_in_archs(int* archs) {
  if (!archs)
    return NVRTC_ERROR_INVALID_INPUT;
  for (int i = 0; i < g_stand_in_count; ++i)
    archs[i] = 90 - i * 10;
  return NVRTC_SUCCESS;
}
const char* stand_in_error(nvrtcResult) {
  return "stand-in error";
}

TEST(AskNvrtc, AnswersItsVersionAndArchsInItsOrderAndNamesAFailingCall) {
  NvrtcApi api{};
  api.nvrtcVersion = &stand_in_version;
  api.nvrtcGetNumSupportedArchs = &stand_in_count;
  api.nvrtcGetSupportedArchs = &stand_in_archs;
  api.nvrtcGetErrorString = &stand_in_error;
  g_stand_in_count = 3;
  auto says = ask_nvrtc(api);
  ASSERT_TRUE(says) << says.error().message;
  EXPECT_EQ(says->major, 13);
  EXPECT_EQ(says->archs, (std::vector<int>{90, 80, 70})) << "NVRTC's order, not sorted";
  g_stand_in_count = 0;
  says = ask_nvrtc(api);
  ASSERT_TRUE(says) << "no archs is an answer, not an error: " << says.error().message;
  EXPECT_TRUE(says->archs.empty());
  g_stand_in_count = -1;
  says = ask_nvrtc(api);
  ASSERT_FALSE(says);
  EXPECT_NE(says.error().message.find("nvrtcGetNumSupportedArchs"), std::string::npos);
  g_stand_in_count = 99;
  says = ask_nvrtc(api);
  ASSERT_FALSE(says);
  EXPECT_NE(says.error().message.find("nvrtcGetNumSupportedArchs"), std::string::npos)
      << says.error().message;
}

TEST(CudaTarget, AKnownDeviceGetsItsExactArchitecture) {
  auto target = device_target(k_nvrtc, 86);
  ASSERT_TRUE(target);
  EXPECT_EQ(target->arch, "sm_86");
  EXPECT_EQ(target->compute_capability, "8.6");
  EXPECT_FALSE(target->ptx);
}

TEST(CudaTarget, ADeviceNewerThanNvrtcGetsPtxForItsNewestArchitecture) {
  auto target = device_target(k_nvrtc, 130);
  ASSERT_TRUE(target);
  EXPECT_EQ(target->arch, "compute_121");
  EXPECT_EQ(target->compute_capability, "13.0");
  EXPECT_TRUE(target->ptx);
}

TEST(CudaTarget, ADeviceOlderThanNvrtcIsUnsupported) {
  auto target = device_target(k_nvrtc, 70);
  ASSERT_FALSE(target);
  EXPECT_EQ(target.error().code, ErrorCode::unsupported);
  EXPECT_NE(target.error().message.find("sm_75, sm_80"), std::string::npos);
}

TEST(CudaTarget, ArchNames) {
  auto plain = arch_target(k_nvrtc, "sm_90");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->compute_capability, "9.0");
  auto specific = arch_target(k_nvrtc, "sm_90a");
  ASSERT_TRUE(specific);
  EXPECT_EQ(specific->arch, "sm_90a");
  EXPECT_EQ(specific->compute_capability, "9.0");
  EXPECT_EQ(arch_target(k_nvrtc, "sm_120")->compute_capability, "12.0");
  EXPECT_EQ(arch_target(k_nvrtc, "sm_70").error().code, ErrorCode::unsupported);
  for (const char* bad : {"", "sm_", "sm_8", "sm_80x", "compute_80", "gfx90a", "sm_-80"}) {
    EXPECT_EQ(arch_target(k_nvrtc, bad).error().code, ErrorCode::invalid_argument) << bad;
    EXPECT_EQ(named_target(bad).error().code, ErrorCode::invalid_argument) << bad;
  }
  EXPECT_NE(arch_target(k_nvrtc, "sm_8").error().message.find("can target sm_75, sm_80"),
            std::string::npos);
  EXPECT_EQ(named_target("sm_70")->compute_capability, "7.0") << "NVRTC is not asked";
}

TEST(CudaTarget, ADeviceAndItsArchitectureShareAKey) {
  // An offline precompile for sm_80 must be a hit for a device of compute capability 8.0.
  Program program;
  program.source = "extern \"C\" __global__ void k() {}";
  const Key from_device = make_key(k_nvrtc, *device_target(k_nvrtc, 80), Config(), program).first;
  const Key from_arch = make_key(k_nvrtc, *arch_target(k_nvrtc, "sm_80"), Config(), program).first;
  EXPECT_EQ(from_device.digest, from_arch.digest);
  // And the targets a package is looked up with, before NVRTC is asked what it can target.
  EXPECT_EQ(make_key(k_nvrtc, native_target(80), Config(), program).first.digest, from_arch.digest);
  EXPECT_EQ(make_key(k_nvrtc, *named_target("sm_80"), Config(), program).first.digest,
            from_arch.digest);
}

Config in(const test::TempDir& dir, std::map<std::string, std::string> extra = {}) {
  extra.emplace("JITCACHE_DIR", dir.path().string());
  return Config::from_variables(extra);
}

TEST(CudaRemembered, NvrtcsIdentityIsRememberedForTheLibrarySearchThatFoundIt) {
  test::TempDir dir;
  auto real = toolchain();
  ASSERT_TRUE(real) << real.error().message;
  const auto ask = [&](const Config& config) {
    Cache cache(config); // a fresh Cache reads the record from the user tier, as a new process
    bool remembered = false;
    const Program program;
    Runtime runtime(config, program, "sm_90");
    auto tools = detail::identity_for_keys(cache, runtime, &remembered);
    EXPECT_TRUE(tools) << tools.error().message;
    EXPECT_TRUE(tools && decode_toolchain(*tools) == **real);
    return remembered;
  };
  EXPECT_FALSE(ask(in(dir))) << "nothing remembered yet: NVRTC is opened";
  EXPECT_TRUE(ask(in(dir))) << "the same library search: remembered";
  const Config other_search = in(dir, {{"LD_LIBRARY_PATH", "/usr/lib"}});
  EXPECT_FALSE(ask(other_search)) << "another library search path may find another NVRTC";
  EXPECT_TRUE(ask(other_search));
  EXPECT_FALSE(ask(in(dir, {{"JITCACHE_DISABLE", "cuda"}}))) << "no user tier for CUDA";
}

TEST(CudaRemembered, ACubKeyIsRecalledWithoutReadingAHeader) {
  test::TempDir dir;
  auto tools = toolchain();
  ASSERT_TRUE(tools) << tools.error().message;
  const Program program = test::kernel_program("block_reduce.cu");
  const Target target = *arch_target(**tools, "sm_90");
  const auto [full, deps] = make_key(**tools, target, in(dir), program);
  EXPECT_GT(deps.files().read.size(), 50u) << "CUB pulls in many toolkit headers";
  std::optional<Digest> guessed; // what the pending key offered before its stamps were checked
  test::FakeStampClock clock;
  clock.settle(); // the toolkit's headers, and the directories this test process just made
  const auto remembered = [&](const Program& request) {
    Cache cache(in(dir));
    detail::core_of(cache).set_stamp_clock(clock.clock());
    Runtime runtime(cache.config(), request, "sm_90");
    const std::string identity = encode_toolchain(**tools);
    EXPECT_TRUE(runtime.select(identity));
    auto pending = detail::remembered_key(cache, runtime, identity, "sm_90");
    guessed.reset();
    if (const Key* guess = pending.guess())
      guessed = guess->digest;
    return *pending.settle();
  };
  const auto first = remembered(program);
  EXPECT_FALSE(first.recalled);
  EXPECT_FALSE(guessed) << "nothing remembered to guess from";
  EXPECT_EQ(first.key.digest, full.digest);
  const auto second = remembered(program);
  EXPECT_EQ(guessed, full.digest) << "the remembered key is offered before it is proven";
  EXPECT_TRUE(second.recalled);
  EXPECT_EQ(second.key.digest, full.digest);
  EXPECT_EQ(second.key.stored_fields, full.stored_fields);
  ASSERT_TRUE(second.guards);
  EXPECT_GE(detail::decode_stamps(*second.guards)->size(), deps.files().read.size());
  Program another = program;
  another.options.push_back("-DANOTHER_REQUEST");
  EXPECT_FALSE(remembered(another).recalled);
}

// A package made where NVRTC was another build (its key fields say so) still serves: its cubin
// is ready whatever NVRTC this machine has. The key built with this machine's NVRTC would not
// find it.
TEST(CudaPackaged, APackageMadeWithAnotherNvrtcServesWithoutCompiling) {
  test::TempDir made, user, packages;
  const Program program = test::kernel_program("saxpy.cu");
  Entry stored;
  {
    Cache cache(in(made));
    auto binary = compile(cache, "sm_90", program);
    ASSERT_TRUE(binary) << binary.error().message;
    cache.flush();
    for (const auto& tier : cache.tiers())
      if (tier->name() == "user")
        if (auto found = tier->get(binary->info.key); found && *found)
          stored = **found;
    ASSERT_EQ(stored.payload, binary->cubin);
  }
  const fs::path package = packages.path() / "cuda-sm_90.jcpkg";
  const Config config = in(user, {{"JITCACHE_SYSTEM_PATH", package.string()}});
  const Toolchain other{"13.0", "1 bytes", {}};
  const Key key = make_key(other, *named_target("sm_90"), config, program).first;
  auto real = toolchain();
  ASSERT_TRUE(real);
  ASSERT_NE(key.digest, make_key(**real, *named_target("sm_90"), config, program).first.digest);
  stored.key_fields = key.stored_fields;
  ASSERT_TRUE(detail::write_package(package, detail::target_of("cuda", key.fields),
                                    {{key.digest, encode_entry(key.digest, stored)}}));

  Cache cache(config);
  auto served = compile(cache, "sm_90", program);
  ASSERT_TRUE(served) << served.error().message;
  EXPECT_EQ(served->info.outcome, Outcome::hit);
  EXPECT_EQ(served->info.tier, "system");
  EXPECT_EQ(served->info.key, key.digest);
  EXPECT_EQ(served->cubin, stored.payload);
  // What the package does not hold is compiled with this machine's NVRTC, and kept.
  auto compiled = compile(cache, "sm_90", test::kernel_program("scale.cu"));
  ASSERT_TRUE(compiled) << compiled.error().message;
  EXPECT_EQ(compiled->info.outcome, Outcome::miss);
  EXPECT_EQ(test::cubin_sm(compiled->cubin), 90);
  auto again = compile(cache, "sm_90", test::kernel_program("scale.cu"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->info.outcome, Outcome::hit);
  const Stats stats = cache.session_stats();
  EXPECT_EQ(stats.get("cuda", Counter::compiles), 1u);
  EXPECT_EQ(stats.get("cuda", Counter::corrupt), 0u);
}

// A package hit of a request whose key is built from no file reads nothing of the user tier:
// one that does not exist is not made by the hit (the counters make it when they are written),
// and one that exists and remembers NVRTC's identity is not opened. A request the package lacks
// still finds the user tier, and compiles once.
TEST(CudaPackaged, APackageHitOfAKeyBuiltFromNoFileReadsNothingOfTheUserTier) {
  test::TempDir made, dir, packages;
  const auto program_of = [](const std::string& name) {
    Program program;
    program.source = "extern \"C\" __global__ void " + name + "(float* x) { x[0] = 2.0f; }\n";
    program.name = name + ".cu";
    return program;
  };
  const Program packaged = program_of("packaged"), other = program_of("other");
  const fs::path package = packages.path() / "cuda-sm_90.jcpkg";
  {
    auto tools = toolchain();
    ASSERT_TRUE(tools) << tools.error().message;
    Cache cache(in(made));
    auto binary = compile(cache, "sm_90", packaged);
    ASSERT_TRUE(binary) << binary.error().message;
    cache.flush();
    const Key key = make_key(**tools, *arch_target(**tools, "sm_90"), in(made), packaged).first;
    ASSERT_EQ(key.digest, binary->info.key);
    Entry stored;
    for (const auto& tier : cache.tiers())
      if (tier->name() == "user")
        if (auto found = tier->get(key.digest); found && *found)
          stored = **found;
    ASSERT_EQ(stored.payload, binary->cubin);
    ASSERT_TRUE(detail::write_package(package, detail::target_of("cuda", key.fields),
                                      {{key.digest, encode_entry(key.digest, stored)}}));
  }
  const fs::path user = dir.path() / "user";
  const Config config = Config::from_variables(
      {{"JITCACHE_DIR", user.string()}, {"JITCACHE_SYSTEM_PATH", package.string()}});
  {
    Cache cache(config);
    auto served = compile(cache, "sm_90", packaged);
    ASSERT_TRUE(served) << served.error().message;
    EXPECT_EQ(served->info.tier, "system");
    EXPECT_FALSE(fs::exists(user)) << "the package hit made the user tier";
    EXPECT_EQ(cache.session_stats().hits("cuda", "system"), 1u);
  }

  { // the user tier made, remembering NVRTC's identity
    Cache cache(config);
    auto compiled = compile(cache, "sm_90", other);
    ASSERT_TRUE(compiled) << compiled.error().message;
    EXPECT_EQ(compiled->info.outcome, Outcome::miss);
  }
  fs::path tier;
  for (const auto& file : fs::recursive_directory_iterator(user))
    if (file.path().filename() == "data.mdb")
      tier = file.path().parent_path();
  ASSERT_FALSE(tier.empty());
  test::OpenCount opens(tier);
  ASSERT_TRUE(opens.watching());
  Cache cache(config);
  auto served = compile(cache, "sm_90", packaged);
  ASSERT_TRUE(served) << served.error().message;
  EXPECT_EQ(served->info.tier, "system");
  const auto opened = opens.take();
  EXPECT_TRUE(opened.empty()) << "the package hit opened " << test::names(opened);
  auto again = compile(cache, "sm_90", other);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->info.tier, "user");
  EXPECT_EQ(cache.session_stats().get("cuda", Counter::compiles), 0u);
}

} // namespace
} // namespace jitcache::cuda
