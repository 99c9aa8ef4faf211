#pragma once

#include <jitcache/export.hpp>

#include <string>
#include <utility>

namespace jitcache {

/// What kind of failure an Error describes. Stable: tests and callers switch on it.
enum class ErrorCode {
  invalid_argument, ///< bad input from the caller (empty source, unknown backend, bad flag)
  compile_failed,   ///< the runtime compiler rejected the source; Error::log holds its log
  load_failed,      ///< the runtime rejected a binary (stored or fresh)
  runtime_error,    ///< any other runtime API failure; the message names the call
  runtime_missing,  ///< the runtime library or driver is absent on this machine
  no_device,        ///< the runtime is present but has no usable device
  unsupported,      ///< a target or feature the installed toolchain cannot handle
  io_error,         ///< a file or store could not be read or written
  store_full,       ///< a store ran out of space (disk or map)
  read_only,        ///< a write was asked of a read-only store or cache
  corrupt,          ///< stored bytes failed verification
};

/// Returns a short lowercase name for `code` ("compile_failed", ...). Never fails.
JITCACHE_EXPORT const char* to_string(ErrorCode code) noexcept;

/// A failure: a code, a one-line message naming what failed, and for compile errors the
/// compiler's full build log. Plain value type; copying is cheap enough for error paths.
struct Error {
  ErrorCode code = ErrorCode::runtime_error;
  std::string message; ///< one line, e.g. "clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE (-11)"
  std::string log;     ///< compiler build log; empty unless code == compile_failed

  Error() = default;
  Error(ErrorCode c, std::string msg, std::string build_log = {})
      : code(c), message(std::move(msg)), log(std::move(build_log)) {}
};

} // namespace jitcache
