#pragma once

#include <jitcache/expected.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace jitcache::cli {

/// How a shell command ended.
struct CommandResult {
  int exit_code = -1;     ///< its exit status, or 128 + the signal that ended it
  bool timed_out = false; ///< killed (with its process group) at the time limit
  std::string output;     ///< what it wrote on stdout and stderr, interleaved as written
};

/// Runs `command` with /bin/sh -c in a process group of its own, with `environment` ("NAME=VALUE"
/// each) as its whole environment, `input` on its standard input (then end of file) and its
/// standard output and error captured together; waits for it. With `limit`, the group is killed
/// (SIGKILL) when it runs longer. Thread-safe. Errors: runtime_error when the process or its
/// pipes cannot be made.
Expected<CommandResult> run_shell_command(const std::string& command, const std::string& input,
                                          const std::vector<std::string>& environment,
                                          std::optional<std::chrono::milliseconds> limit);

} // namespace jitcache::cli
