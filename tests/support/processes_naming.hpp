#pragma once
// The processes that name a path: what a test waits for, or stops, before its folder goes.

#include "tests/support/files.hpp"

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <sys/types.h>
#include <unistd.h>

namespace jitcache::test {

/// The pids of the processes other than this one whose arguments hold `text` (and, when
/// `environment`, whose environment does; a process of another user's environment cannot be
/// read and does not count). A process that ends meanwhile is left out or listed.
inline std::vector<pid_t> processes_naming(const std::string& text, bool environment) {
  std::vector<pid_t> pids;
  const std::string self = std::to_string(::getpid());
  std::error_code ec;
  for (const auto& item : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = item.path().filename().string();
    if (pid == self || pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (read_file(item.path() / "cmdline").find(text) != std::string::npos ||
        (environment && read_file(item.path() / "environ").find(text) != std::string::npos))
      pids.push_back(static_cast<pid_t>(std::stol(pid)));
  }
  return pids;
}

} // namespace jitcache::test
