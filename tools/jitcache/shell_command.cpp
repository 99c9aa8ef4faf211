#include "tools/jitcache/shell_command.hpp"

#include "core/support/clock.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace jitcache::cli {

using detail::Stopwatch;

namespace {

Error os_error(const std::string& what) {
  return Error(ErrorCode::runtime_error, what + ": " + std::strerror(errno));
}

} // namespace

Expected<CommandResult> run_shell_command(const std::string& command, const std::string& input,
                                          const std::vector<std::string>& environment,
                                          std::optional<std::chrono::milliseconds> limit) {
  // Sockets, not pipes: a child that does not read its input is EPIPE for send(MSG_NOSIGNAL),
  // never a SIGPIPE for this process.
  int in[2], out[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0)
    return os_error("socketpair");
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return os_error("socketpair");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> args{"/bin/sh", "-c", command};
  std::vector<char*> argv, envp;
  for (std::string& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = environment;
  for (std::string& var : env)
    envp.push_back(var.data());
  envp.push_back(nullptr);
  pid_t child = -1;
  const int spawned =
      ::posix_spawn(&child, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(in[1]);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(in[0]);
    ::close(out[0]);
    errno = spawned;
    return os_error("cannot start /bin/sh");
  }

  CommandResult result;
  const Stopwatch clock;
  std::size_t sent = 0;
  int to_child = in[0];
  if (input.empty()) {
    ::close(to_child);
    to_child = -1;
  }
  // The command is done when its shell exits, not when its output closes: a process it leaves
  // in the background may hold the output for as long as it lives. Its exit is watched through
  // a pidfd; where the kernel has none, waitpid is asked every few milliseconds.
  const int exited = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  int from_child = out[0];
  int status = 0;
  bool reaped = false;
  const auto reap = [&] {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    reaped = done == child || (done < 0 && errno == ECHILD);
  };
  const auto read_output = [&](int flags) {
    char buffer[4096];
    const ssize_t n = ::recv(from_child, buffer, sizeof buffer, flags);
    if (n > 0)
      result.output.append(buffer, static_cast<std::size_t>(n));
    else if (n == 0 || (errno != EINTR && errno != EAGAIN))
      from_child = -1; // every writer has closed (or the socket failed)
    return n > 0;
  };
  while (!reaped) {
    pollfd fds[3];
    nfds_t n = 0;
    const auto watch = [&](int fd, short events) {
      if (fd >= 0)
        fds[n++] = {fd, events, 0};
    };
    watch(exited, POLLIN);
    watch(from_child, POLLIN);
    watch(to_child, POLLOUT);
    double wait_ms = exited >= 0 ? 1e9 : 5;
    if (limit) {
      const double left = static_cast<double>(limit->count()) - clock.ms();
      if (left <= 0 && !result.timed_out) {
        ::kill(-child, SIGKILL);
        result.timed_out = true;
      }
      if (!result.timed_out)
        wait_ms = std::min(wait_ms, left + 1);
    }
    if (::poll(fds, n, result.timed_out && exited >= 0 ? -1 : static_cast<int>(wait_ms)) < 0 &&
        errno != EINTR) {
      ::kill(-child, SIGKILL);
      ::waitpid(child, &status, 0);
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (!fds[i].revents)
        continue;
      if (fds[i].fd == to_child) {
        const ssize_t m =
            ::send(to_child, input.data() + sent, input.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (m > 0)
          sent += static_cast<std::size_t>(m);
        if ((m < 0 && errno != EAGAIN && errno != EINTR) || sent == input.size()) {
          ::close(to_child); // done, or the child does not read: end of file for it either way
          to_child = -1;
        }
      } else if (fds[i].fd == from_child) {
        read_output(0);
      }
    }
    if (exited < 0 || (n > 0 && fds[0].revents))
      reap();
  }
  // What the command wrote before it exited is all there: take it without waiting for writers
  // it left behind (bounded: one of them may write for ever).
  for (int reads = 0; reads < 1024 && from_child >= 0 && read_output(MSG_DONTWAIT); ++reads) {
  }
  if (exited >= 0)
    ::close(exited);
  if (to_child >= 0)
    ::close(to_child);
  ::close(out[0]);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

} // namespace jitcache::cli
