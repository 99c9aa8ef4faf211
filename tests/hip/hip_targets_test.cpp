// Target validation against the installed toolchain: hipRTC 5.2 aborts the process on a target
// it does not know, so every one must be refused before hipRTC sees it.
#include "tests/hip/hip_test_support.hpp"

#include "backends/hip/hip_targets.hpp"

namespace jitcache {
namespace {

using test::FreshCache;

const hip::TargetTable& table() {
  auto t = hip::target_table();
  EXPECT_TRUE(t) << t.error().message;
  return **t;
}

TEST(HipTargets, TheToolchainListsTheTargetsItCompiles) {
  auto targets = hip::supported_targets();
  ASSERT_TRUE(targets) << targets.error().message;
  const auto has = [&](const std::string& t) {
    return std::find(targets->begin(), targets->end(), t) != targets->end();
  };
  EXPECT_TRUE(has("gfx906[:sramecc+|-][:xnack+|-]"));
  EXPECT_TRUE(has("gfx90a[:sramecc+|-][:xnack+|-]"));
  EXPECT_TRUE(has("gfx1030"));
  EXPECT_TRUE(has("gfx900[:xnack+|-]"));
}

TEST(HipTargets, CanonicalFormSortsFeatures) {
  const auto canonical = [](const char* target) {
    auto c = hip::canonical_target(target, table());
    return c ? *c : "error: " + c.error().message;
  };
  EXPECT_EQ(canonical("gfx90a"), "gfx90a");
  EXPECT_EQ(canonical("gfx90a:xnack-:sramecc+"), "gfx90a:sramecc+:xnack-");
  EXPECT_EQ(canonical("gfx906:xnack+"), "gfx906:xnack+");
  EXPECT_EQ(canonical("gfx1030"), "gfx1030");
}

// Each of these aborted a process that handed it to hipRTC (checked by hand on hipRTC 5.2).
TEST(HipTargets, UnknownTargetsAndFeaturesAreCleanErrorsNamingTheSupportedOnes) {
  FreshCache fresh;
  const hip::Program saxpy = test::hip_kernel("saxpy.hip");
  struct Case {
    const char* target;
    ErrorCode code;
  };
  const Case cases[] = {
      {"gfx1100", ErrorCode::unsupported},
      {"gfx942", ErrorCode::unsupported},
      {"gfx9999", ErrorCode::unsupported},
      {"GFX90A", ErrorCode::unsupported},
      {"gfx1030:xnack+", ErrorCode::unsupported},
      {"gfx900:sramecc+", ErrorCode::unsupported},
      {"gfx90a:foo+", ErrorCode::unsupported},
      {"amdgcn-amd-amdhsa--gfx90a", ErrorCode::unsupported},
      {"", ErrorCode::invalid_argument},
      {"gfx90a:", ErrorCode::invalid_argument},
      {"gfx90a:sramecc", ErrorCode::invalid_argument},
      {"gfx90a:xnack+:xnack-", ErrorCode::invalid_argument},
  };
  for (const Case& c : cases) {
    auto code = hip::compile(*fresh.cache, c.target, saxpy);
    ASSERT_FALSE(code) << c.target;
    EXPECT_EQ(code.error().code, c.code) << c.target << ": " << code.error().message;
    EXPECT_NE(code.error().message.find("gfx90a[:sramecc+|-][:xnack+|-]"), std::string::npos)
        << code.error().message;
    EXPECT_NE(code.error().message.find("gfx1030"), std::string::npos);
  }
  EXPECT_EQ(fresh.hip_entries(), 0);
  EXPECT_EQ(fresh.cache->session_stats().get("hip", Counter::compile_errors), 0u);
}

// The other half of the promise: whatever the validation lets through, hipRTC compiles (every
// processor comgr lists, and every feature setting of one that takes both features).
TEST(HipTargets, EveryAcceptedTargetCompiles) {
  hip::Program tiny;
  tiny.name = "tiny.hip";
  tiny.source = "extern \"C\" __global__ void k(int* a) { a[threadIdx.x] = 1; }\n";
  FreshCache fresh;
  std::vector<std::string> targets;
  for (const auto& [processor, features] : table().processors)
    targets.push_back(processor);
  for (const char* t : {"gfx90a:sramecc+", "gfx90a:sramecc-", "gfx90a:xnack+", "gfx90a:xnack-",
                        "gfx90a:sramecc+:xnack+", "gfx90a:sramecc-:xnack-"})
    targets.push_back(t);
  for (const std::string& target : targets) {
    auto code = hip::compile(*fresh.cache, target, tiny);
    ASSERT_TRUE(code) << target << ": " << code.error().message;
    EXPECT_EQ(code->target, target);
  }
}

} // namespace
} // namespace jitcache
