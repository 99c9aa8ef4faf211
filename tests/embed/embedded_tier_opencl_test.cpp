// This program embeds opencl-pocl.jcpkg, made at build time by `jitcache build --backend opencl`
// and `jitcache export --device 0` on this machine's PoCL (CMakeLists.txt).
#include "tests/embed/unwritable_cache.hpp"

#include <jitcache/opencl.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace jitcache {
namespace {

TEST(EmbeddedTierOpenCL, ServesPoclWithNothingCompiledAndNoFileWritten) {
  std::ifstream in(std::string(JITCACHE_KERNELS) + "/vector_ops.cl");
  std::ostringstream source;
  source << in.rdbuf();
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  ASSERT_EQ(clGetPlatformIDs(1, &platform, nullptr), CL_SUCCESS);
  ASSERT_EQ(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), CL_SUCCESS);
  cl_int rc = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);
  ASSERT_EQ(rc, CL_SUCCESS);
  {
    test::UnwritableCache unwritable;
    auto built = opencl::build_program(*unwritable.cache, context, device, source.str(),
                                       std::string("-I ") + JITCACHE_KERNELS);
    ASSERT_TRUE(built) << built.error().message << "\n" << built.error().log;
    EXPECT_EQ(built->info.outcome, Outcome::hit);
    EXPECT_EQ(built->info.tier, "embedded");
    cl_kernel kernel = clCreateKernel(built->program, "saxpy", &rc);
    EXPECT_EQ(rc, CL_SUCCESS);
    if (kernel)
      clReleaseKernel(kernel);
    clReleaseProgram(built->program);
    unwritable.expect_served_by_embedded_tier("opencl", 1);
  }
  clReleaseContext(context);
}

} // namespace
} // namespace jitcache
