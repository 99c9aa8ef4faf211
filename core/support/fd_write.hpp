#pragma once

#include <jitcache/expected.hpp>

#include <string_view>

namespace jitcache::detail {

/// Writes all of `bytes` to `fd`, retrying short writes and EINTR. Errors: io_error with the
/// system's reason (ENOSPC when a write makes no progress). The file may hold part of `bytes`.
Expected<void> write_all(int fd, std::string_view bytes);

} // namespace jitcache::detail
