#pragma once

#include <map>
#include <string>
#include <vector>

namespace jitcache::test {

/// Result of running a child process.
struct ProcessResult {
  int exit_code = -1; ///< exit status, or 128+signal when killed
  std::string out;    ///< standard output
  std::string err;    ///< standard error
};

/// Runs `argv` (argv[0] a path) in a fresh process with the current environment plus `env`.
/// Waits for it; captures stdout and stderr.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env = {});

/// A user and group a child process runs as (see run_cli_as).
struct Identity {
  unsigned uid = 0;
  unsigned gid = 0;
};

/// Like run_process, in a child that drops to `who` (setgroups, setresgid, setresuid: needs
/// root) before it executes `argv`. exit_code is 126 when it cannot drop.
ProcessResult run_process_as(const Identity& who, const std::vector<std::string>& argv,
                             const std::map<std::string, std::string>& env = {});

/// Runs the jitcache CLI with `args` and `env`.
ProcessResult run_cli(const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env = {});

/// Runs the jitcache CLI as `who` (see run_process_as).
ProcessResult run_cli_as(const Identity& who, const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& env = {});

} // namespace jitcache::test
