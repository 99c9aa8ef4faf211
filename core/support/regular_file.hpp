#pragma once

#include <jitcache/expected.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>

namespace jitcache::detail {

/// The content of the regular file at `path`, at most `max_bytes` long, and its stat data in
/// `*st` when given. Never blocks and never reads without end: the file is opened non-blocking
/// and refused unless it is a regular file (a FIFO with no writer, /dev/zero or a directory
/// each get a one-line error). Errors (io_error, the message naming the path): it cannot be
/// opened (with the system's reason), it is a directory, FIFO, device or socket, it is larger
/// than `max_bytes` (naming the limit), or a read fails.
Expected<std::string> read_regular_file(const std::string& path, std::uint64_t max_bytes,
                                        struct stat* st = nullptr);

/// A descriptor (to close) of the regular file at `path` (relative to `dir_fd`, as openat(2)
/// takes it), opened with `flags` (O_RDONLY, O_WRONLY | O_APPEND | O_CREAT, ...; created with
/// `mode`), and its stat data in `*st` when given. Never blocks and never follows a symbolic
/// link as the last component: O_NONBLOCK (cleared once the file is known to be regular),
/// O_NOFOLLOW, O_NOCTTY and O_CLOEXEC are added, and what is not a regular file is refused (a
/// FIFO with or without a peer, a device, a directory, a socket). For a file another party can
/// swap (a request file, a record). Errors: io_error whose message is the reason only (the
/// system's, or "a FIFO, not a regular file", "a symbolic link, not followed"): the caller
/// names the file.
Expected<int> open_regular_file(const std::string& path, int flags, mode_t mode = 0600,
                                struct stat* st = nullptr, int dir_fd = AT_FDCWD);

} // namespace jitcache::detail
