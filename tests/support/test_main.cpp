// The main of every GoogleTest binary: ctest runs each test in a process of its own, many at
// once, so each process gets a home, a cache home and a current directory of its own. The
// runtimes keep their caches under the home (PoCL's kcache, the CUDA driver's ComputeCache,
// comgr's), which concurrent processes must not share, and a key's stamps include the current
// directory (headers are looked for there), which must not change under a test. OpenCL stores
// happen in the process (JITCACHE_OPENCL_STORE=wait) unless a test asks for the hand-over: a
// test that expects a hit in its next process must not race a detached store process.
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

int main(int argc, char** argv) {
  const jitcache::test::TempDir own;
  const std::filesystem::path home = own.path() / "home", work = own.path() / "work";
  std::filesystem::create_directories(home / ".cache");
  std::filesystem::create_directories(work);
  ::setenv("HOME", home.c_str(), 1);
  ::setenv("XDG_CACHE_HOME", (home / ".cache").c_str(), 1);
  // Nor is the user's configuration file read: a test's processes read only the one it writes.
  ::setenv("XDG_CONFIG_HOME", (home / ".config").c_str(), 1);
  ::unsetenv("JITCACHE_CONFIG_FILE");
  ::setenv("JITCACHE_OPENCL_STORE", "wait", 0);
  std::filesystem::current_path(work);
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  std::filesystem::current_path(own.path().parent_path()); // out of what TempDir removes
  return failed;
}
