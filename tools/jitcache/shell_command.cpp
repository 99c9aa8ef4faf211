#include "tools/jitcache/shell_command.hpp"

#include "core/clock.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace jitcache::cli {

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
  for (bool open = true; open;) {
    pollfd fds[2] = {{out[0], POLLIN, 0}, {to_child, POLLOUT, 0}};
    int wait_ms = -1;
    if (limit) {
      const double left = static_cast<double>(limit->count()) - clock.ms();
      if (left <= 0) {
        ::kill(-child, SIGKILL);
        result.timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min(left, 1e9)) + 1;
    }
    if (::poll(fds, to_child >= 0 ? 2 : 1, wait_ms) < 0) {
      if (errno == EINTR)
        continue;
      ::kill(-child, SIGKILL);
      break;
    }
    if (to_child >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t n =
          ::send(to_child, input.data() + sent, input.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0)
        sent += static_cast<std::size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == input.size()) {
        ::close(to_child); // done, or the child does not read: end of file for it either way
        to_child = -1;
      }
    }
    if (fds[0].revents & (POLLIN | POLLERR | POLLHUP)) {
      char buffer[4096];
      const ssize_t n = ::read(out[0], buffer, sizeof buffer);
      if (n > 0)
        result.output.append(buffer, static_cast<std::size_t>(n));
      else if (n == 0 || errno != EINTR)
        open = false; // every writer has closed (or the socket failed)
    }
  }
  if (to_child >= 0)
    ::close(to_child);
  ::close(out[0]);
  // The output may close before the command ends (it closed both, or a process it left holds
  // them no more): the time limit still holds until it exits.
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, limit && !result.timed_out ? WNOHANG : 0);
    if (done == child || (done < 0 && errno != EINTR))
      break;
    if (done == 0 && static_cast<double>(limit->count()) <= clock.ms()) {
      ::kill(-child, SIGKILL);
      result.timed_out = true;
    } else if (done == 0) {
      ::usleep(2000);
    }
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

} // namespace jitcache::cli
