#include "backends/opencl/opencl_error.hpp"

namespace jitcache::opencl {

const char* status_name(cl_int status) noexcept {
  switch (status) {
#define JITCACHE_CL_STATUS(name)                                                                   \
  case name:                                                                                       \
    return #name;
    JITCACHE_CL_STATUS(CL_SUCCESS)
    JITCACHE_CL_STATUS(CL_DEVICE_NOT_FOUND)
    JITCACHE_CL_STATUS(CL_DEVICE_NOT_AVAILABLE)
    JITCACHE_CL_STATUS(CL_COMPILER_NOT_AVAILABLE)
    JITCACHE_CL_STATUS(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    JITCACHE_CL_STATUS(CL_OUT_OF_RESOURCES)
    JITCACHE_CL_STATUS(CL_OUT_OF_HOST_MEMORY)
    JITCACHE_CL_STATUS(CL_BUILD_PROGRAM_FAILURE)
    JITCACHE_CL_STATUS(CL_INVALID_VALUE)
    JITCACHE_CL_STATUS(CL_INVALID_PLATFORM)
    JITCACHE_CL_STATUS(CL_INVALID_DEVICE)
    JITCACHE_CL_STATUS(CL_INVALID_CONTEXT)
    JITCACHE_CL_STATUS(CL_INVALID_BINARY)
    JITCACHE_CL_STATUS(CL_INVALID_BUILD_OPTIONS)
    JITCACHE_CL_STATUS(CL_INVALID_PROGRAM)
    JITCACHE_CL_STATUS(CL_INVALID_PROGRAM_EXECUTABLE)
    JITCACHE_CL_STATUS(CL_INVALID_KERNEL_NAME)
    JITCACHE_CL_STATUS(CL_INVALID_OPERATION)
#undef JITCACHE_CL_STATUS
  case -1001:
    return "CL_PLATFORM_NOT_FOUND_KHR";
  default:
    return "CL_ERROR";
  }
}

Error cl_error(const char* call, cl_int status, ErrorCode code, std::string log) {
  return Error(code,
               std::string(call) + " failed: " + status_name(status) + " (" +
                   std::to_string(status) + ")",
               std::move(log));
}

} // namespace jitcache::opencl
