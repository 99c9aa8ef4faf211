#pragma once

// A command run with its stderr on a pseudo-terminal (what a person at a terminal sees): how
// the CLI's progress lines are tested. Linked with util (openpty) where the test uses it.

#include <cerrno>
#include <fcntl.h>
#include <map>
#include <pty.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace jitcache::test {

/// What the terminal showed, and how the command ended.
struct TerminalRun {
  int spawned = -1;  ///< posix_spawn's status (0: it ran)
  int status = 0;    ///< waitpid's status
  std::string shown; ///< every byte written to stderr, as the terminal received it
};

/// Runs `args` (args[0] a path) with this process's environment plus `env`, stdout to
/// `out_path` (a file; /dev/null by default) and stderr on a new pseudo-terminal, until it exits.
inline TerminalRun run_on_terminal(std::vector<std::string> args,
                                   const std::map<std::string, std::string>& env = {},
                                   const std::string& out_path = "/dev/null") {
  TerminalRun run;
  std::vector<std::string> variables;
  for (const auto& [name, value] : env)
    variables.push_back(name + "=" + value);
  for (char** e = environ; *e; ++e) {
    const std::string variable = *e;
    if (env.count(variable.substr(0, variable.find('='))) == 0)
      variables.push_back(variable);
  }
  std::vector<char*> envp;
  for (std::string& variable : variables)
    envp.push_back(variable.data());
  envp.push_back(nullptr);
  int terminal = -1, child_side = -1;
  if (openpty(&terminal, &child_side, nullptr, nullptr, nullptr) != 0)
    return run;
  std::vector<char*> argv;
  for (std::string& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, child_side, 2);
  posix_spawn_file_actions_addclose(&actions, child_side);
  posix_spawn_file_actions_addclose(&actions, terminal);
  pid_t pid = 0;
  run.spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(child_side);
  char chunk[4096];
  for (ssize_t n; run.spawned == 0;) { // EIO once the child and its stderr are gone
    if ((n = read(terminal, chunk, sizeof chunk)) > 0)
      run.shown.append(chunk, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  close(terminal);
  if (run.spawned == 0)
    waitpid(pid, &run.status, 0);
  return run;
}

} // namespace jitcache::test
