#pragma once

#include "core/support/shared_library.hpp"

#include <jitcache/expected.hpp>

#include <amd_comgr.h>
#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>
#include <hip/hiprtc.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

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
  detail::LibraryFile runtime_file; ///< libamdhip64
  /// The library hipRTC came from (libamdhip64 itself before ROCm 6).
  detail::LibraryFile hiprtc_file;
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
  detail::LibraryFile file;
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

/// How long the first HIP call (which initialises the runtime and enumerates the GPUs) may
/// take before jitcache gives up on the runtime for the rest of the process.
inline constexpr std::chrono::seconds k_init_limit{60};

/// Runs `fn` on a detached thread and waits at most `limit` for it. Returns its result, or
/// nullopt when it did not return in time: it is then left running (a call stuck in a driver
/// cannot be cancelled) and its result is dropped. `fn` must own everything it touches.
template <typename T>
std::optional<T> call_within(std::chrono::milliseconds limit, std::function<T()> fn) {
  struct State {
    std::mutex mutex;
    std::condition_variable done_cv;
    std::optional<T> result;
  };
  auto state = std::make_shared<State>();
  std::thread([state, fn = std::move(fn)] {
    T value = fn();
    std::lock_guard<std::mutex> lock(state->mutex);
    state->result = std::move(value);
    state->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(state->mutex);
  state->done_cv.wait_for(lock, limit, [&] { return state->result.has_value(); });
  return state->result;
}

/// The number of HIP devices. The first call initialises the HIP runtime (hipGetDeviceCount)
/// within k_init_limit; later calls return the same answer at once. Thread-safe.
/// Errors: runtime_missing (no libamdhip64), no_device (naming hipErrorNoDevice, or zero
/// devices), runtime_error (initialisation did not finish in time: a hung driver; no HIP call
/// is made in this process after that).
Expected<int> device_count();

/// Succeeds once the HIP runtime has initialised, whether or not it found a device: what a
/// hipRTC call needs first, since hipRTC initialises the runtime too (and would hang with it).
/// Errors: runtime_missing, runtime_error (as device_count).
Expected<void> runtime_ready();

} // namespace jitcache::hip
