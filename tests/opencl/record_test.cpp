// JITCACHE_RECORD through the library: each distinct build_program request is recorded once,
// under the key it was built with, with its headers by content.
#include <jitcache/opencl.hpp>

#include "core/record/request_record.hpp"
#include "tests/support/files.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace jitcache {
namespace {
using test::read_file;

namespace fs = std::filesystem;

TEST(OpenclRecord, EachDistinctRequestIsRecordedOnceUnderItsKey) {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  ASSERT_EQ(clGetPlatformIDs(1, &platform, nullptr), CL_SUCCESS) << "PoCL must be installed";
  ASSERT_EQ(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), CL_SUCCESS);
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, nullptr);
  ASSERT_NE(context, nullptr);
  test::TempDir dir;
  const fs::path record = dir.path() / "record.jsonl";
  const std::string options = std::string("-I ") + JITCACHE_KERNELS;
  const std::string source = read_file(fs::path(JITCACHE_KERNELS) / "matmul.cl");
  std::vector<Digest> keys;
  {
    Cache cache(Config::from_variables({{"JITCACHE_DIR", (dir.path() / "cache").string()},
                                        {"JITCACHE_OPENCL_STORE", "wait"},
                                        {"JITCACHE_RECORD", record.string()}}));
    for (const char* extra : {"", "", " -DTILE_EXTRA=1"}) {
      auto built = opencl::build_program(cache, context, device, source, options + extra);
      ASSERT_TRUE(built) << built.error().message;
      clReleaseProgram(built->program);
      keys.push_back(built->info.key);
    }
  }
  clReleaseContext(context);
  std::ifstream in(record);
  std::vector<detail::RequestRecord> lines;
  for (std::string line; std::getline(in, line);) {
    auto decoded = detail::decode_request(line);
    ASSERT_TRUE(decoded) << decoded.error().message;
    lines.push_back(*decoded);
  }
  ASSERT_EQ(lines.size(), 2u) << "the repeated request is recorded once";
  EXPECT_EQ(lines[0].key, keys[0].hex());
  EXPECT_EQ(lines[1].key, keys[2].hex());
  EXPECT_EQ(lines[1].options, std::vector<std::string>{options + " -DTILE_EXTRA=1"});
  EXPECT_EQ(lines[0].source, source);
  ASSERT_EQ(lines[0].headers.size(), 1u);
  EXPECT_EQ(lines[0].headers[0].content, read_file(fs::path(JITCACHE_KERNELS) / "common.h"));
  EXPECT_EQ(lines[0].directory, fs::current_path().string());
}

} // namespace
} // namespace jitcache
