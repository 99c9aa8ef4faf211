// This program embeds hip-gfx90a.jcpkg, made at build time by `jitcache build --arch gfx90a` and
// `jitcache export` (CMakeLists.txt): the offline compile path finds the code object there.
#include "tests/embed/unwritable_cache.hpp"
#include "tests/hip/hip_test_support.hpp"

#include <gtest/gtest.h>

namespace jitcache {
namespace {

TEST(EmbeddedTierHip, ServesGfx90aWithNothingCompiledAndNoFileWritten) {
  test::UnwritableCache unwritable;
  // Named after its file, as the command-line tool names the file it builds.
  auto code = hip::compile(*unwritable.cache, "gfx90a", test::hip_kernel("saxpy.hip"));
  ASSERT_TRUE(code) << code.error().message << "\n" << code.error().log;
  EXPECT_EQ(code->info.outcome, Outcome::hit);
  EXPECT_EQ(code->info.tier, "embedded");
  EXPECT_EQ(code->code.compare(0, 4, "\177ELF"), 0);
  unwritable.expect_served_by_embedded_tier("hip", 1);
}

} // namespace
} // namespace jitcache
