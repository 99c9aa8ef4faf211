#pragma once

#include <jitcache/expected.hpp>

#include <cuda.h>
#include <nvrtc.h>

#include <string>

namespace jitcache::cuda {

// cuda.h maps some names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2); the two-step
// stringification looks up the symbol the header means, and the member takes the same name.
#define JITCACHE_CUDA_STR2(x) #x
#define JITCACHE_CUDA_STR(x) JITCACHE_CUDA_STR2(x)

/// The libcuda.so.1 functions jitcache calls (tests and benchmarks use the same table, so that
/// nothing links libcuda). Every pointer is non-null once the table is returned.
struct DriverApi {
#define JITCACHE_CUDA_DRIVER_FUNCTIONS(X)                                                          \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuDevicePrimaryCtxRelease)                                                                     \
  X(cuCtxGetCurrent)                                                                               \
  X(cuCtxSetCurrent)                                                                               \
  X(cuCtxGetDevice)                                                                                \
  X(cuCtxSynchronize)                                                                              \
  X(cuModuleLoadData)                                                                              \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuMemAlloc)                                                                                    \
  X(cuMemFree)                                                                                     \
  X(cuMemcpyHtoD)                                                                                  \
  X(cuMemcpyDtoH)                                                                                  \
  X(cuLaunchKernel)
#define JITCACHE_CUDA_MEMBER(fn) decltype(&::fn) fn = nullptr;
  JITCACHE_CUDA_DRIVER_FUNCTIONS(JITCACHE_CUDA_MEMBER)
  int version = 0; ///< cuDriverGetVersion, e.g. 13000
};

/// The NVRTC functions jitcache calls, and which library file provided them.
struct NvrtcApi {
#define JITCACHE_CUDA_NVRTC_FUNCTIONS(X)                                                           \
  X(nvrtcGetErrorString)                                                                           \
  X(nvrtcVersion)                                                                                  \
  X(nvrtcGetNumSupportedArchs)                                                                     \
  X(nvrtcGetSupportedArchs)                                                                        \
  X(nvrtcCreateProgram)                                                                            \
  X(nvrtcDestroyProgram)                                                                           \
  X(nvrtcCompileProgram)                                                                           \
  X(nvrtcGetProgramLogSize)                                                                        \
  X(nvrtcGetProgramLog)                                                                            \
  X(nvrtcGetCUBINSize)                                                                             \
  X(nvrtcGetCUBIN)                                                                                 \
  X(nvrtcGetPTXSize)                                                                               \
  X(nvrtcGetPTX)                                                                                   \
  X(nvrtcAddNameExpression)                                                                        \
  X(nvrtcGetLoweredName)
  JITCACHE_CUDA_NVRTC_FUNCTIONS(JITCACHE_CUDA_MEMBER)
#undef JITCACHE_CUDA_MEMBER
  std::string file; ///< the library file actually opened (symlinks resolved)
};

/// libcuda.so.1, opened and cuInit(0)-ed at the first call; later calls return the same answer
/// (the table lives until the process exits). Thread-safe.
/// Errors: runtime_missing (no driver library, or one lacking a function: the message names it),
/// no_device (cuInit found no device), runtime_error (any other cuInit failure).
Expected<const DriverApi*> driver();

/// NVRTC, opened at the first call: JITCACHE_NVRTC_SONAME then libnvrtc.so by soname, then the
/// same two names in the toolkit's library directory found at build time. Later calls return the
/// same answer. Thread-safe. Errors: runtime_missing naming what was tried, or the missing
/// function.
Expected<const NvrtcApi*> nvrtc();

} // namespace jitcache::cuda
