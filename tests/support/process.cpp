#include "tests/support/process.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

extern char** environ;

namespace jitcache::test {

namespace {

// Starts argv[0] with stdout and stderr on the pipes' write ends; as `who` when given.
pid_t start(char* const* args, char* const* envp, int out, int err, const Identity* who) {
  if (!who) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out, 1);
    posix_spawn_file_actions_adddup2(&actions, err, 2);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args, envp);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
      throw std::runtime_error(std::string("posix_spawn ") + args[0] + ": " + std::strerror(rc));
    return pid;
  }
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(out, 1);
    ::dup2(err, 2);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(who->gid, who->gid, who->gid) != 0 ||
        ::setresuid(who->uid, who->uid, who->uid) != 0)
      ::_exit(126);
    ::execve(args[0], args, envp);
    ::_exit(127);
  }
  return pid;
}

ProcessResult run(const Identity* who, const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env) {
  // The child's environment: ours, with `env` applied.
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq)
      merged[std::string(*e, static_cast<std::size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& [name, value] : env)
    merged[name] = value;
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : merged)
    env_strings.push_back(name + "=" + value);
  std::vector<char*> envp, args;
  for (auto& s : env_strings)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy)
    args.push_back(s.data());
  args.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  pid_t pid = 0;
  try {
    pid = start(args.data(), envp.data(), out_pipe[1], err_pipe[1], who);
  } catch (...) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      close(fd);
    throw;
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP)))
        continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

} // namespace

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env) {
  return run(nullptr, argv, env);
}

ProcessResult run_process_as(const Identity& who, const std::vector<std::string>& argv,
                             const std::map<std::string, std::string>& env) {
  return run(&who, argv, env);
}

ProcessResult run_cli(const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv{JITCACHE_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, env);
}

ProcessResult run_cli_as(const Identity& who, const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv{JITCACHE_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process_as(who, argv, env);
}

} // namespace jitcache::test
