#include "core/engine/store_handover.hpp"

#include "core/config/config_table.hpp"
#include "core/support/fd_write.hpp"
#include "core/support/flock_within.hpp"
#include "core/support/shared_library.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace jitcache::detail {

namespace {

Error io_error(const std::string& what, const fs::path& path, int err) {
  return Error(ErrorCode::io_error, what + " " + path.string() + ": " + std::strerror(err));
}

bool executable(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Starts `args` (args[0] the executable) through posix_spawn with this process's environment
// and `variables` in place of jitcache's settings: in its own session, with default signal
// handling and an empty signal mask, the standard streams on /dev/null and no other descriptor.
// posix_spawn's error (0: started, `child` set).
int spawn(std::vector<std::string> args, const std::map<std::string, std::string>& variables,
          pid_t& child) {
  std::vector<char*> argv;
  for (std::string& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> environment = child_environment(variables);
  std::vector<char*> envp;
  for (std::string& entry : environment)
    envp.push_back(entry.data());
  envp.push_back(nullptr);
  // posix_spawn, not fork(): glibc starts the child with vfork semantics, sharing this process's
  // memory until it executes the worker. A fork() would mark every page of an application that
  // holds PoCL's LLVM copy-on-write, and the application's own exit (LLVM freeing its modules)
  // then took tens of thousands of page faults: a third of a second for 24 programs on PoCL.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDWR, 0);
  posix_spawn_file_actions_adddup2(&actions, STDIN_FILENO, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, STDIN_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  const int spawned =
      ::posix_spawn(&child, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  return spawned;
}

// Waits for `child`; false when it was reaped unseen (the process ignores SIGCHLD).
bool reap(pid_t child, int& status) {
  pid_t waited;
  while ((waited = ::waitpid(child, &status, 0)) < 0 && errno == EINTR) {
  }
  return waited == child;
}

std::string exit_status(int status) {
  return std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

} // namespace

std::optional<fs::path> store_worker() {
  std::vector<fs::path> candidates;
  const LibraryFile self = library_file(reinterpret_cast<const void*>(&store_worker));
  // The CLI installed with the binary holding this code, wherever that prefix was moved: beside
  // libjitcache.so (libdir) or beside the Python module (its package folder).
  if (!self.path.empty()) {
    candidates.push_back(fs::path(self.path).parent_path() / JITCACHE_LIB_TO_BIN / "jitcache");
#ifdef JITCACHE_PYTHON_TO_BIN
    candidates.push_back(fs::path(self.path).parent_path() / JITCACHE_PYTHON_TO_BIN / "jitcache");
#endif
  }
  candidates.emplace_back(JITCACHE_BUILD_TREE_CLI);
  candidates.emplace_back(JITCACHE_INSTALLED_CLI);
  for (const fs::path& candidate : candidates)
    if (executable(candidate))
      return candidate.lexically_normal();
  return std::nullopt;
}

Expected<int> open_worker_lock(int dir_fd) {
  for (int attempt = 0;; ++attempt) {
    // O_NONBLOCK: a FIFO of that name opens at once (and is then refused), never waited on.
    const int fd = ::openat(dir_fd, k_worker_lock,
                            O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
      return fd;
    const int err = fd >= 0 ? EINVAL : errno;
    if (fd >= 0)
      ::close(fd);
    // ELOOP: a symlink; EISDIR: a directory; EINVAL: a FIFO, socket or device. Removed (never
    // followed), once: what is there the second time is an error.
    if (attempt > 0 || (err != ELOOP && err != EISDIR && err != EINVAL && err != ENXIO))
      return Error(ErrorCode::io_error, std::string("cannot open the store worker's lock ") +
                                            k_worker_lock + ": " + std::strerror(err));
    ::unlinkat(dir_fd, k_worker_lock, err == EISDIR ? AT_REMOVEDIR : 0);
  }
}

namespace {

// Whether a store worker holds the worker lock of `pending` now. false when it cannot be told
// (the lock cannot be opened): a worker is started, which sees for itself.
bool worker_alive(const fs::path& pending) {
  const int dir_fd = ::open(pending.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0)
    return false;
  auto lock = open_worker_lock(dir_fd);
  ::close(dir_fd);
  if (!lock)
    return false;
  // Held for an instant when free: a worker that finds it so while unlocked gives up its
  // relock, and the worker started below lists the folder after taking it.
  const bool held = ::flock(*lock, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  unlock_and_close(*lock); // not left held by a child forked in that instant
  return held;
}

} // namespace

Expected<fs::path> hand_over(const fs::path& worker, const fs::path& pending,
                             const std::vector<RequestRecord>& requests,
                             const std::map<std::string, std::string>& variables) {
  if (::mkdir(pending.c_str(), 0700) != 0 && errno != EEXIST)
    return io_error("cannot create", pending, errno);
  struct stat st {};
  if (::lstat(pending.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Error(ErrorCode::io_error, pending.string() + " is not a directory");

  std::string bytes;
  for (const RequestRecord& record : requests)
    bytes += encode_request(record) + "\n";
  // A name no other process can pick: the pid, a counter, the clock.
  static std::atomic<unsigned> serial{0};
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const std::string stem = std::to_string(::getpid()) + "-" + std::to_string(serial++) + "-" +
                           std::to_string(now.tv_sec) + std::to_string(now.tv_nsec);
  const fs::path partial = pending / (stem + ".part");
  const fs::path file = pending / (stem + ".jsonl");
  const int fd =
      ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return io_error("cannot create", partial, errno);
  auto written = write_all(fd, bytes);
  ::close(fd);
  if (!written || ::rename(partial.c_str(), file.c_str()) != 0) {
    const int err = written ? errno : ENOSPC;
    ::unlink(partial.c_str());
    return io_error("cannot write", file, err);
  }

  // One store worker per cache, never one per run. The file is written before the lock is
  // looked at: a worker that holds it now lists the folder again after it lets go, so it takes
  // this file.
  if (worker_alive(pending))
    return file;

  // The pending folder, not its files: the store process lists it and takes batch after
  // batch (its own file among the first, the newest), so no number of files left behind can
  // make the command line too long.
  // `store --detach` forks at once into the worker (re-parented to init, never a zombie of the
  // caller) and lowers its priorities; this process waits only for the fork.
  pid_t child = -1;
  const int spawned = spawn({worker.string(), "store", "--detach", "--pending", pending.string()},
                            variables, child);
  if (spawned != 0) {
    ::unlink(file.c_str());
    return Error(ErrorCode::runtime_error, "cannot start the store process " + worker.string() +
                                               ": " + std::strerror(spawned));
  }
  int status = 0;
  // ECHILD: the application ignores SIGCHLD, so its children are reaped unseen; the process was
  // started, and a request file it could not take is taken by a later one.
  if (reap(child, status) && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
    ::unlink(file.c_str());
    return Error(ErrorCode::runtime_error, "cannot start the store process " + worker.string() +
                                               ": it exited with status " + exit_status(status));
  }
  return file;
}

Expected<void> wait_for_stores(const fs::path& worker, const fs::path& pending,
                               const std::map<std::string, std::string>& variables,
                               std::chrono::milliseconds limit) {
  struct stat st {};
  if (::lstat(pending.c_str(), &st) != 0 && errno == ENOENT)
    return {}; // nothing was ever handed over
  std::vector<std::string> args{worker.string(), "store", "--wait", "--pending", pending.string()};
  if (limit.count() > 0) {
    args.emplace_back("--timeout");
    args.push_back(std::to_string(std::chrono::duration<double>(limit).count()));
  }
  pid_t child = -1;
  if (const int spawned = spawn(args, variables, child); spawned != 0)
    return Error(ErrorCode::runtime_error,
                 "cannot start " + worker.string() + " store --wait: " + std::strerror(spawned));
  int status = 0;
  if (!reap(child, status))
    return Error(ErrorCode::runtime_error,
                 "cannot tell whether the stores are done: this process ignores SIGCHLD");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return {};
  if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
    return Error(ErrorCode::runtime_error,
                 "the stores handed over to " + pending.string() + " were not done within " +
                     std::to_string(limit.count()) + " ms, or a request file could not be read " +
                     "(`jitcache store --wait` says which)");
  return Error(ErrorCode::runtime_error,
               worker.string() + " store --wait exited with status " + exit_status(status));
}

} // namespace jitcache::detail
