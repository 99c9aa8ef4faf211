#pragma once

#include <jitcache/expected.hpp>

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

} // namespace jitcache::detail
