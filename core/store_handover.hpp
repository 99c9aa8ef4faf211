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
/// symlink is refused) and starts `worker store --remove FILE...` detached (with the files of
/// `pending` older than an hour: left by a store process that was killed): in its own session,
/// re-parented to init (never a zombie of the caller), at idle CPU and I/O priority, with
/// standard streams on /dev/null. Does not wait for it; the caller may exit at once. Returns
/// the file. Errors: io_error (the folder or file), runtime_error (fork failed; the file is
/// removed). Safe in a threaded process: the child runs only async-signal-safe calls until it
/// executes the worker.
Expected<std::filesystem::path> hand_over(const std::filesystem::path& worker,
                                          const std::filesystem::path& pending,
                                          const std::vector<RequestRecord>& requests);

} // namespace jitcache::detail
