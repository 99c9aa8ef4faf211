#include "tools/jitcache/worker_pool.hpp"

#include "core/support/fd_write.hpp"
#include "core/support/json_line.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace jitcache::cli {

namespace {

struct Worker {
  pid_t pid = -1;
  int to = -1;                        ///< its standard input
  int from = -1;                      ///< its standard output
  std::string pending;                ///< bytes read past the last newline
  std::optional<std::size_t> current; ///< the item it was given and has not answered
};

void close_fd(int& fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

// Starts one worker, its pipes' other ends in this process (close-on-exec: no worker inherits
// another's). nullopt when it cannot be started.
std::optional<Worker> start(const std::vector<std::string>& args) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0)
    return std::nullopt;
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return std::nullopt;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE); // ignored here while writing to the workers
  posix_spawnattr_setsigdefault(&attributes, &pipe_signal);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  for (const std::string& arg : args)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  Worker worker;
  const int rc = ::posix_spawn(&worker.pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    return std::nullopt;
  }
  worker.to = in[1];
  worker.from = out[0];
  return worker;
}

// How a worker process ended, for people.
std::string ending(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

} // namespace

std::size_t run_in_workers(const std::vector<std::string>& argv, std::size_t workers,
                           std::size_t count, const WorkerPoolCalls& calls) {
  // A worker that ends makes writing to it fail with EPIPE instead of ending this process.
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  std::vector<Worker> pool;
  for (std::size_t i = 0; i < workers && i < count; ++i)
    if (auto worker = start(argv))
      pool.push_back(std::move(*worker));
  if (pool.empty()) {
    ::sigaction(SIGPIPE, &previous, nullptr);
    return 0;
  }
  std::size_t next = 0;
  // Gives `worker` the next item, or closes its input when there is none (it then exits).
  const auto feed = [&](Worker& worker) {
    if (next == count) {
      close_fd(worker.to);
      return;
    }
    const std::string line = std::to_string(next) + "\n";
    if (calls.given)
      calls.given(next);
    worker.current = next++;
    if (::write(worker.to, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
      close_fd(worker.to); // it ended: its end of file comes, and the item is lost then
  };
  for (Worker& worker : pool)
    feed(worker);
  for (std::size_t alive = pool.size(); alive > 0;) {
    std::vector<pollfd> fds;
    std::vector<Worker*> owners;
    for (Worker& worker : pool)
      if (worker.from >= 0) {
        fds.push_back({worker.from, POLLIN, 0});
        owners.push_back(&worker);
      }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno == EINTR)
      continue;
    for (std::size_t f = 0; f < fds.size(); ++f) {
      if (!fds[f].revents)
        continue;
      Worker& worker = *owners[f];
      char buffer[1 << 14];
      const ssize_t n = ::read(worker.from, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) { // it ended
        close_fd(worker.from);
        close_fd(worker.to);
        const std::string why = "its worker process " + ending(worker.pid);
        if (worker.current)
          calls.lost(*worker.current, why + " before answering");
        --alive;
        continue;
      }
      worker.pending.append(buffer, static_cast<std::size_t>(n));
      for (std::size_t end; (end = worker.pending.find('\n')) != std::string::npos;) {
        const std::string line = worker.pending.substr(0, end);
        worker.pending.erase(0, end + 1);
        const auto answer = nlohmann::json::parse(line, nullptr, false);
        if (!answer.is_object() || !answer.contains("item") ||
            !answer["item"].is_number_unsigned() || !worker.current ||
            answer["item"].get<std::size_t>() != *worker.current)
          continue; // not an answer to what it was given: the loss shows when it ends
        worker.current.reset();
        calls.done(answer["item"].get<std::size_t>(), answer);
        feed(worker);
      }
    }
  }
  for (; next < count; ++next)
    calls.lost(next, "no worker process was left to take it");
  ::sigaction(SIGPIPE, &previous, nullptr);
  return pool.size();
}

int serve_items(std::size_t count, const std::function<nlohmann::json(std::size_t)>& work) {
  // The answers go to a private copy of the pipe, and standard output becomes standard error:
  // whatever else writes to fd 1 (a runtime's printf, a linker process PoCL starts) would
  // otherwise run into an answer's line, and the parent would wait for it for ever.
  std::cout.flush();
  std::fflush(stdout);
  const int answers = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (answers < 0) {
    std::cerr << "jitcache: error: --serve: " << std::strerror(errno) << "\n";
    return 2;
  }
  static_cast<void>(::dup2(STDERR_FILENO, STDOUT_FILENO)); // no standard error: fd 1 as it was
  for (std::string line; std::getline(std::cin, line);) {
    std::size_t used = 0;
    std::size_t item = count;
    try {
      item = std::stoul(line, &used);
    } catch (const std::exception&) {
    }
    if (item >= count || used != line.size()) {
      std::cerr << "jitcache: error: --serve: '" << line << "' is not an item below " << count
                << "\n";
      return 2;
    }
    nlohmann::json answer = work(item);
    answer["item"] = item;
    std::cout.flush(); // what the work printed comes before the answer that ends it
    std::fflush(stdout);
    if (!detail::write_all(answers, detail::json_line(answer) + "\n"))
      return 2; // the parent is gone
  }
  ::close(answers);
  return 0;
}

} // namespace jitcache::cli
