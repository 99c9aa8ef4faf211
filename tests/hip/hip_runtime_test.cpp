// The HIP runtime seen from a machine that may have no AMD GPU, or no HIP at all.
#include "tests/hip/hip_test_support.hpp"

#include "backends/hip/hip_api.hpp"
#include "core/support/clock.hpp"

#include <elf.h>

#include <fstream>
#include <future>

namespace jitcache {

using detail::Stopwatch;
namespace {

// The libraries the executable at `path` names as DT_NEEDED (from its section headers).
std::vector<std::string> needed_libraries(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string elf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  Elf64_Ehdr header;
  if (elf.size() < sizeof header)
    return out;
  std::memcpy(&header, elf.data(), sizeof header);
  const auto section = [&](std::size_t i) {
    Elf64_Shdr s{};
    std::memcpy(&s, elf.data() + header.e_shoff + i * sizeof s, sizeof s);
    return s;
  };
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    const Elf64_Shdr dynamic = section(i);
    if (dynamic.sh_type != SHT_DYNAMIC)
      continue;
    const Elf64_Shdr strings = section(dynamic.sh_link);
    for (std::size_t at = 0; at + sizeof(Elf64_Dyn) <= dynamic.sh_size; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry;
      std::memcpy(&entry, elf.data() + dynamic.sh_offset + at, sizeof entry);
      if (entry.d_tag == DT_NEEDED)
        out.emplace_back(elf.data() + strings.sh_offset + entry.d_un.d_val);
    }
  }
  return out;
}

TEST(HipRuntime, NothingLinksTheHipRuntimeOrComgr) {
  for (const std::string& path : {std::string("/proc/self/exe"), std::string(JITCACHE_CLI)}) {
    const auto needed = needed_libraries(path);
    EXPECT_FALSE(needed.empty()) << path;
    for (const std::string& library : needed) {
      EXPECT_EQ(library.find("amdhip64"), std::string::npos) << path;
      EXPECT_EQ(library.find("hiprtc"), std::string::npos) << path;
      EXPECT_EQ(library.find("comgr"), std::string::npos) << path;
    }
  }
}

TEST(HipRuntime, AMissingRuntimeLibraryIsANamedError) {
  auto api = hip::open_runtime("libjitcache-no-such-amdhip64.so.5");
  ASSERT_FALSE(api);
  EXPECT_EQ(api.error().code, ErrorCode::runtime_missing);
  EXPECT_NE(api.error().message.find("libjitcache-no-such-amdhip64.so.5"), std::string::npos)
      << api.error().message;
}

TEST(HipRuntime, ATuningDeviceWithoutAGpuIsNoDeviceNamingTheCall) {
  if (hip::device_count())
    GTEST_SKIP() << "an AMD GPU is present";
  auto device = hip::tuning_device();
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().code, ErrorCode::no_device) << device.error().message;
  EXPECT_NE(device.error().message.find("hipGetDeviceCount"), std::string::npos)
      << device.error().message;
}

TEST(HipRuntime, LoadingWithoutAGpuIsANamedErrorSoon) {
  if (hip::device_count())
    GTEST_SKIP() << "an AMD GPU is present";
  test::FreshCache fresh;
  Stopwatch clock;
  auto module = hip::load_module(*fresh.cache, test::hip_kernel("saxpy.hip"));
  ASSERT_FALSE(module);
  EXPECT_LT(clock.ms(), 10'000);
  EXPECT_EQ(module.error().code, ErrorCode::no_device) << module.error().message;
  // Whatever this runtime says about the missing GPU, the message names the call and the error.
  EXPECT_NE(module.error().message.find("hipGetDeviceCount"), std::string::npos)
      << module.error().message;
  EXPECT_NE(module.error().message.find("hipError"), std::string::npos) << module.error().message;
  // And it keeps saying so, without compiling or storing anything.
  auto again = hip::load_module(*fresh.cache, test::hip_kernel("saxpy.hip"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().message, module.error().message);
  EXPECT_EQ(fresh.hip_entries(), 0);
  EXPECT_EQ(fresh.cache->session_stats().get("hip", Counter::compiles), 0u);
}

TEST(HipRuntime, ACallThatNeverReturnsIsAbandonedAtTheLimit) {
  // The call returns only once the test lets it, after call_within has given up on it.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto answer = hip::call_within<int>(std::chrono::milliseconds(50), [released] {
    released.wait();
    return 1;
  });
  EXPECT_FALSE(answer);
  release.set_value();
  EXPECT_EQ(hip::call_within<int>(std::chrono::milliseconds(5'000), [] { return 7; }), 7);
}

} // namespace
} // namespace jitcache
