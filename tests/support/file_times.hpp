#pragma once
// Files whose content changes while their size and modification time stay, and files old enough
// for their stamps to vouch (core/key/file_stamp.hpp, too_recent): what the manifest tests make.

#include "tests/support/files.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace jitcache::test {

/// stat(2) of `p` (a failure is a test failure).
inline struct stat stat_of(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st;
}

/// `p`'s status change time, in nanoseconds since the epoch.
inline std::int64_t ctime_ns(const std::filesystem::path& p) {
  const struct stat st = stat_of(p);
  return std::int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
}

/// Rewrites `p` with `content` and sets its modification time back to what it was: only the
/// status change time tells.
inline void rewrite_keeping_mtime(const std::filesystem::path& p, const std::string& content) {
  const struct stat before = stat_of(p);
  write_file(p, content);
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0);
}

/// Returns once a file written now gets a later status change time than `p`'s (the kernel's
/// timestamps are as fine as its clock tick: a few milliseconds), writing `scratch` to see.
inline void until_ctime_passes(const std::filesystem::path& p,
                               const std::filesystem::path& scratch) {
  const std::int64_t t = ctime_ns(p);
  do
    write_file(scratch, "tick");
  while (ctime_ns(scratch) <= t);
}

/// Returns once `p`'s stamp is old enough to vouch for its content (more than 2 s, too_recent).
inline void until_settled(const std::filesystem::path& p) {
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  while (now_ns() - ctime_ns(p) <= 2'100'000'000)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

} // namespace jitcache::test
