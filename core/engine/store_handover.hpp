#pragma once

#include "core/record/request_record.hpp"

#include <jitcache/expected.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace jitcache::detail {

/// The `jitcache` executable that stores handed-over requests: the one installed beside this
/// library or beside the Python module holding this code (relocatable installs), else the one
/// of the build tree this library was built in, else the one of the configured install prefix;
/// the first that exists and is executable.
/// nullopt when there is none. (A `jitcache` of another version computes other keys and drops
/// every request: it never stores a wrong binary.)
std::optional<std::filesystem::path> store_worker();

/// The lock file of a pending folder: the one store worker of a cache holds an exclusive flock
/// on it for its whole life (`jitcache store --pending`), and writes its pid into it.
inline constexpr const char* k_worker_lock = "worker.lock";

/// Opens (creating it, mode 0600) the worker lock of the pending folder `dir_fd`, read-write,
/// close-on-exec: a regular file only. A symlink of that name is never followed and a FIFO
/// never waited on; such a thing (or an empty directory) is removed and the file created anew.
/// Returns the descriptor, which the caller closes. Errors: io_error.
Expected<int> open_worker_lock(int dir_fd);

/// Writes `requests` (JSON lines, mode 0600; what to build, never where: no variable) to a new
/// file in `pending` (created, mode 0700; a symlink is refused) and starts `worker store
/// --detach --pending PENDING` through posix_spawn (no copy-on-write of this process's memory):
/// in its own session, with default signal handling, standard streams on /dev/null, no other
/// descriptor, and this process's environment with `variables` (the requesting Config's) in
/// place of jitcache's own settings and the compile environment, so it stores with the
/// requester's settings, secrets included, without any being written to a file. That process
/// stores into the cache `pending` belongs to (its parent) every request file of the folder,
/// in bounded batches, newest first, and cleans it (`jitcache store --pending`). Waits
/// only for the process started, which forks the worker and exits at once: the worker is
/// re-parented to init (never a zombie of the caller) and runs at idle CPU and I/O priority.
/// The caller may exit at once. When a store worker is alive (the folder's k_worker_lock is
/// held), nothing is started: that worker looks at the folder again before it ends, so it
/// takes the file. Returns the file. Errors: io_error (the folder or file),
/// runtime_error (the process could not be started or failed to detach; the file is removed).
/// Safe in a threaded process.
Expected<std::filesystem::path> hand_over(const std::filesystem::path& worker,
                                          const std::filesystem::path& pending,
                                          const std::vector<RequestRecord>& requests,
                                          const std::map<std::string, std::string>& variables);

/// Runs `worker store --wait --pending PENDING [--timeout SECONDS]` (started as hand_over
/// starts its process, with `variables`) and waits for it: until the folder holds no request
/// file and no store worker is alive, the stores left being made by that process when none is;
/// at most `limit` (zero: no limit). Returns at once when `pending` does not exist. Errors:
/// runtime_error (not done within `limit`, a request file could not be read, the process
/// could not be started or was killed, or this process ignores SIGCHLD).
Expected<void> wait_for_stores(const std::filesystem::path& worker,
                               const std::filesystem::path& pending,
                               const std::map<std::string, std::string>& variables,
                               std::chrono::milliseconds limit);

} // namespace jitcache::detail
