#pragma once

#include "core/request_record.hpp"

#include <jitcache/expected.hpp>

#include <filesystem>
#include <optional>
#include <vector>

namespace jitcache::detail {

/// The `jitcache` executable that stores handed-over requests: the one installed beside this
/// library (relocatable installs), else the one of the build tree this library was built in,
/// else the one of the configured install prefix; the first that exists and is executable.
/// nullopt when there is none. (A `jitcache` of another version computes other keys and drops
/// every request: it never stores a wrong binary.)
std::optional<std::filesystem::path> store_worker();

/// Writes `requests` (JSON lines, mode 0600) to a new file in `pending` (created, mode 0700; a
/// symlink is refused) and starts `worker store --detach --remove FILE...` (with the request
/// files of `pending` older than an hour that no store process read; those older than an hour
/// that one read and did not finish, FILE.taken, are removed: each request is tried once) through
/// posix_spawn (no copy-on-write of this process's memory): in its own session, with default signal
/// handling, standard streams on /dev/null and no other descriptor. Waits only for that
/// process, which forks the worker and exits at once: the worker is re-parented to init (never
/// a zombie of the caller) and runs at idle CPU and I/O priority. The caller may exit at once.
/// Returns the file. Errors: io_error (the folder or file), runtime_error (the process could
/// not be started or failed to detach; the file is removed). Safe in a threaded process.
Expected<std::filesystem::path> hand_over(const std::filesystem::path& worker,
                                          const std::filesystem::path& pending,
                                          const std::vector<RequestRecord>& requests);

} // namespace jitcache::detail
