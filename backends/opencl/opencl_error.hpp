#pragma once

#include <jitcache/error.hpp>
#include <jitcache/opencl.hpp>

#include <string>

namespace jitcache::opencl {

/// The name of an OpenCL status code ("CL_BUILD_PROGRAM_FAILURE"), or "CL_ERROR(<n>)".
const char* status_name(cl_int status) noexcept;

/// An Error of `code` for `call` having returned `status`:
/// "clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE (-11)".
Error cl_error(const char* call, cl_int status, ErrorCode code = ErrorCode::runtime_error,
               std::string log = {});

} // namespace jitcache::opencl
