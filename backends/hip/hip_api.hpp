#pragma once

#include "core/shared_library.hpp"

#include <jitcache/expected.hpp>

#include <amd_comgr.h>
#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>
#include <hip/hiprtc.h>

#include <cstdint>
#include <string>

namespace jitcache::hip {

// The HIP headers may map a name to a versioned symbol (hipGetDeviceProperties ->
// hipGetDevicePropertiesR0600 from ROCm 6); the two-step stringification looks up the symbol
// the header means, and the member takes the same name.
#define JITCACHE_HIP_STR2(x) #x
#define JITCACHE_HIP_STR(x) JITCACHE_HIP_STR2(x)


/// The libamdhip64 and hipRTC functions jitcache calls (tests and benchmarks use the same table,
/// so that nothing links libamdhip64). Every pointer is non-null once the table is returned.
struct RuntimeApi {
#define JITCACHE_HIP_RUNTIME_FUNCTIONS(X)                                                          \
  X(hipGetErrorName)                                                                               \
  X(hipGetErrorString)                                                                             \
  X(hipGetDeviceCount)                                                                             \
  X(hipGetDeviceProperties)                                                                        \
  X(hipGetDevice)                                                                                  \
  X(hipSetDevice)                                                                                  \
  X(hipModuleLoadData)                                                                             \
  X(hipModuleUnload)                                                                               \
  X(hipModuleGetFunction)                                                                          \
  X(hipModuleLaunchKernel)                                                                         \
  X(hipDeviceSynchronize)                                                                          \
  X(hipFree)                                                                                       \
  X(hipMemcpyHtoD)                                                                                 \
  X(hipMemcpyDtoH)
#define JITCACHE_HIPRTC_FUNCTIONS(X)                                                               \
  X(hiprtcGetErrorString)                                                                          \
  X(hiprtcCreateProgram)                                                                           \
  X(hiprtcDestroyProgram)                                                                          \
  X(hiprtcAddNameExpression)                                                                       \
  X(hiprtcCompileProgram)                                                                          \
  X(hiprtcGetProgramLogSize)                                                                       \
  X(hiprtcGetProgramLog)                                                                           \
  X(hiprtcGetCodeSize)                                                                             \
  X(hiprtcGetCode)                                                                                 \
  X(hiprtcGetLoweredName)
#define JITCACHE_HIP_MEMBER(fn) decltype(&::fn) fn = nullptr;
  JITCACHE_HIP_RUNTIME_FUNCTIONS(JITCACHE_HIP_MEMBER)
  JITCACHE_HIPRTC_FUNCTIONS(JITCACHE_HIP_MEMBER)
  /// hipMalloc is overloaded by a template in C++, so its type is spelled out.
  hipError_t (*hipMalloc)(void**, std::size_t) = nullptr;
  LibraryFile runtime_file; ///< libamdhip64
  LibraryFile hiprtc_file;  ///< the library hipRTC came from (libamdhip64 itself before ROCm 6)
};

/// The comgr functions jitcache calls: the ISA list that says which targets hipRTC can take.
struct ComgrApi {
#define JITCACHE_COMGR_FUNCTIONS(X)                                                                \
  X(amd_comgr_get_version)                                                                         \
  X(amd_comgr_get_isa_count)                                                                       \
  X(amd_comgr_get_isa_name)                                                                        \
  X(amd_comgr_get_isa_metadata)                                                                    \
  X(amd_comgr_metadata_lookup)                                                                     \
  X(amd_comgr_get_metadata_kind)                                                                   \
  X(amd_comgr_get_metadata_string)                                                                 \
  X(amd_comgr_iterate_map_metadata)                                                                \
  X(amd_comgr_destroy_metadata)
  JITCACHE_COMGR_FUNCTIONS(JITCACHE_HIP_MEMBER)
#undef JITCACHE_HIP_MEMBER
  std::string version; ///< amd_comgr_get_version, e.g. "2.4"
  LibraryFile file;
};

/// The soname matching the HIP headers built against (hipDeviceProp_t's layout changes between
/// major versions, so no other major is tried), e.g. "libamdhip64.so.5".
inline constexpr const char* k_runtime_soname =
    "libamdhip64.so." JITCACHE_HIP_STR(HIP_VERSION_MAJOR);
/// Where hipRTC lives when libamdhip64 does not export it (ROCm 6 and later).
inline constexpr const char* k_hiprtc_soname = "libhiprtc.so." JITCACHE_HIP_STR(HIP_VERSION_MAJOR);
/// The comgr soname matching amd_comgr.h, e.g. "libamd_comgr.so.2".
inline constexpr const char* k_comgr_soname =
    "libamd_comgr.so." JITCACHE_HIP_STR(AMD_COMGR_INTERFACE_VERSION_MAJOR);

/// libamdhip64 and hipRTC, opened (dlopen only: no HIP call is made) at the first call; later
/// calls return the same answer, and the table lives until the process exits. Thread-safe.
/// Errors: runtime_missing naming the library and dlerror(), or the first missing function.
Expected<const RuntimeApi*> runtime();

/// libamd_comgr, opened at the first call, as runtime(). Errors: runtime_missing.
Expected<const ComgrApi*> comgr();

/// Opens the runtime from `soname` without remembering the answer: what runtime() does once,
/// exposed so that tests can name a library that does not exist.
Expected<RuntimeApi> open_runtime(const std::string& soname);

} // namespace jitcache::hip
