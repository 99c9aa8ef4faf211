#pragma once
// How many inotify instances this process holds, read from its file descriptors: whether code
// under test opened one (a test of what a process may use up of the user's 128 by default).

#include <filesystem>
#include <system_error>

namespace jitcache::test {

inline int inotify_instances() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(entry.path(), ec).string() == "anon_inode:inotify")
      ++count;
  }
  return count;
}

} // namespace jitcache::test
