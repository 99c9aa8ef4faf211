#pragma once

#include <jitcache/entry.hpp>
#include <jitcache/error.hpp>
#include <jitcache/expected.hpp>

#include <CL/cl.h>

#include <string>
#include <string_view>

namespace jitcache::opencl {

/// The build log of `program` for `device`, without trailing NULs and newlines; empty when the
/// runtime gives none.
std::string build_log(cl_program program, cl_device_id device);

/// Builds `program` for `device` with `options`. On failure releases `program` and returns an
/// error of code `failure` (compile_failed: the message ends with the build log; load_failed:
/// a binary the runtime refused), carrying the log, or invalid_argument for options the runtime
/// is known to crash on (a trailing `-D` or `-I`), which are never handed to it.
Expected<cl_program> build(cl_program program, cl_device_id device, const std::string& options,
                           ErrorCode failure);

/// A program built from `source`; the caller owns one reference. Errors: compile_failed (with
/// the build log), runtime_error naming the failing call.
Expected<cl_program> from_source(cl_context context, cl_device_id device, std::string_view source,
                                 const std::string& options);

/// A program built from a stored binary; the caller owns one reference. `binary` is read only
/// during the call. Errors: load_failed (the runtime refused it), runtime_error.
Expected<cl_program> from_binary(cl_context context, cl_device_id device, std::string_view binary,
                                 const std::string& options);

/// The binary of a program built for one device. On PoCL this is where every kernel of the
/// program is compiled (seconds for a large program), which is why it runs off the caller's
/// path. Errors: runtime_error (a failing call, or an empty binary).
Expected<std::string> read_binary(cl_program program);

/// The entry of a program built for one device: its binary (read_binary), and as metadata the
/// kernels the runtime names in it, its build log when it says something, and `name`, the
/// source's name (may be empty). Errors as read_binary.
Expected<Entry> entry_of(cl_program program, const std::string& name);

} // namespace jitcache::opencl
