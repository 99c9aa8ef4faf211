#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace jitcache::test {

/// A child process forked to run `body` in a copy of this one (for what only another process
/// can show: cross-process leases, locks, a process killed mid-operation, a private mount
/// namespace). Its exit status is body's return value, or 128+signal when killed. Its stderr is
/// captured, and it writes every warning once as a new process would, whatever this process
/// already wrote (log::forget_said_once). The child can send the parent one-line messages
/// (tell_parent) that the parent waits for (next_message). The destructor kills (SIGKILL) and reaps
/// a child still running.
class ChildProcess {
public:
  explicit ChildProcess(const std::function<int()>& body);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return m_pid; }

  /// In the child: sends `message` (no newline in it) to the parent.
  static void tell_parent(const std::string& message);

  /// Waits for the child's next message; std::nullopt when it exited without sending one.
  std::optional<std::string> next_message();

  /// Sends `signal` to the child.
  void kill(int signal);

  /// Waits for the child to exit and returns its status (exit code, or 128+signal).
  int wait();

  /// What the child wrote to stderr (complete once wait() returned).
  const std::string& err() const { return m_err; }

private:
  pid_t m_pid = -1;
  int m_messages = -1;
  int m_stderr = -1;
  std::string m_pending; ///< message bytes read past the last newline
  std::string m_err;
  std::optional<int> m_status;
};

/// In a child: gives it a mount namespace of its own (unshare, mounts made private), so that
/// what it mounts vanishes with it. False when that is not permitted (needs CAP_SYS_ADMIN).
bool private_mounts();

/// Runs the jitcache CLI with `args`, and `env` added to the environment, in a child whose
/// standard output goes to /dev/null and that SIGALRM ends after `seconds`: a hang is an exit
/// status of 128 + SIGALRM, not a test that never ends. Returns the exit status (128 + signal
/// when killed); `*err`, when given, receives what it wrote to standard error.
int run_cli_bounded(const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& env, unsigned seconds,
                    std::string* err = nullptr);

/// A child process that opens the user tier in `dir` for writing and keeps it open until it is
/// killed (by the destructor at the latest); returns once it is open.
std::unique_ptr<ChildProcess> process_holding_user_tier(const std::filesystem::path& dir);

} // namespace jitcache::test
