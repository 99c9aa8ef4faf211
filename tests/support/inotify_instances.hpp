#pragma once
// The inotify instances this process holds, read from its file descriptors, and the watches they
// hold, read from /proc/self/fdinfo: whether code under test opened one (a test of what a process
// may use up of the user's 128 by default), and what it watches for.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <utility>

namespace jitcache::test {

/// The descriptors of this process's inotify instances.
inline std::set<int> inotify_fds() {
  std::set<int> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(entry.path(), ec).string() == "anon_inode:inotify")
      out.insert(std::stoi(entry.path().filename().string()));
  }
  return out;
}

inline int inotify_instances() {
  return static_cast<int>(inotify_fds().size());
}

/// Each watched inode (device as the kernel writes it, inode number) and the events asked of
/// it, over this process's inotify instances but those in `except`.
using InotifyWatches = std::map<std::pair<unsigned long, unsigned long>, std::uint32_t>;
inline InotifyWatches inotify_watches(const std::set<int>& except = {}) {
  InotifyWatches out;
  for (int fd : inotify_fds()) {
    if (except.count(fd))
      continue;
    std::ifstream info("/proc/self/fdinfo/" + std::to_string(fd));
    for (std::string line; std::getline(info, line);) {
      // inotify wd:3 ino:1a2b sdev:800001 mask:300 ignored_mask:0 ...
      const auto ino = line.find(" ino:"), dev = line.find(" sdev:"), mask = line.find(" mask:");
      if (line.rfind("inotify ", 0) != 0 || ino == std::string::npos || dev == std::string::npos ||
          mask == std::string::npos)
        continue;
      out[{std::stoul(line.substr(dev + 6), nullptr, 16),
           std::stoul(line.substr(ino + 5), nullptr, 16)}] |=
          static_cast<std::uint32_t>(std::stoul(line.substr(mask + 6), nullptr, 16));
    }
  }
  return out;
}

} // namespace jitcache::test
