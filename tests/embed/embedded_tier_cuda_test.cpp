// This program embeds cuda-sm_90.jcpkg, made at build time by `jitcache build --arch sm_90` and
// `jitcache export` (CMakeLists.txt): the offline compile path finds the cubin there.
#include "core/support/shared_library.hpp"
#include "tests/cuda/cuda_test_support.hpp"
#include "tests/embed/unwritable_cache.hpp"

#include <gtest/gtest.h>

namespace jitcache {

using detail::loaded_library;
namespace {

TEST(EmbeddedTierCuda, ServesSm90WithNothingCompiledAndNoFileWritten) {
  test::UnwritableCache unwritable;
  auto binary = cuda::compile(*unwritable.cache, "sm_90", test::kernel_program("saxpy.cu"));
  ASSERT_TRUE(binary) << binary.error().message << "\n" << binary.error().log;
  EXPECT_EQ(binary->info.outcome, Outcome::hit);
  EXPECT_EQ(binary->info.tier, "embedded");
  EXPECT_EQ(binary->target, "sm_90");
  EXPECT_EQ(test::cubin_sm(binary->cubin), 90);
  unwritable.expect_served_by_embedded_tier("cuda", 1);
  // The key was built with the NVRTC identity the package's entries carry: NVRTC, a library of
  // about 100 MB that a hit does not need, was not opened.
  EXPECT_EQ(loaded_library("libnvrtc"), "");
}

} // namespace
} // namespace jitcache
