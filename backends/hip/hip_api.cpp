#include "backends/hip/hip_api.hpp"

#include "core/support/shared_library.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "backends/hip/hip_error.hpp"

namespace jitcache::hip {

using detail::library_file;
using detail::loaded_library;
using detail::loaded_once;
using detail::SymbolLoader;

#define JITCACHE_HIP_LOAD(fn) symbols.load(api.fn, JITCACHE_HIP_STR(fn));

namespace {

Error missing_library(const std::string& soname, const char* what) {
  const char* reason = dlerror();
  return Error(ErrorCode::runtime_missing,
               std::string(what) + " (" + soname +
                   ") could not be opened: " + (reason ? reason : "unknown reason"));
}

// Debian 12's comgr carries its own copy of clang and registers clang's command-line options
// into the shared libLLVM; a process that already holds libclang-cpp (PoCL loads it) aborts the
// moment comgr loads ("Option ... registered more than once"). Refuse with an error instead.
std::string loaded_clang() {
  return loaded_library("libclang-cpp.so");
}

Error clang_conflict(const std::string& clang) {
  return Error(ErrorCode::runtime_missing,
               "HIP's compiler (comgr) cannot be loaded into this process: it already holds " +
                   clang +
                   " (loaded by PoCL), and the two register the same LLVM options, "
                   "which aborts the process; use HIP and PoCL from separate processes");
}

Expected<ComgrApi> open_comgr() {
  if (const std::string clang = loaded_clang(); !clang.empty())
    return clang_conflict(clang);
  void* library = dlopen(k_comgr_soname, RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return missing_library(k_comgr_soname, "comgr, which hipRTC compiles with,");
  ComgrApi api;
  SymbolLoader symbols(library);
  JITCACHE_COMGR_FUNCTIONS(JITCACHE_HIP_LOAD)
  if (!symbols.missing().empty())
    return Error(ErrorCode::runtime_missing,
                 std::string(k_comgr_soname) + " is too old: it lacks " + symbols.missing());
  std::size_t major = 0, minor = 0;
  api.amd_comgr_get_version(&major, &minor);
  api.version = std::to_string(major) + "." + std::to_string(minor);
  api.file = library_file(reinterpret_cast<const void*>(api.amd_comgr_get_version));
  return api;
}

} // namespace

Expected<RuntimeApi> open_runtime(const std::string& soname) {
  if (const std::string clang = loaded_clang(); !clang.empty())
    return clang_conflict(clang);
  // RTLD_LOCAL: HIP's symbols stay out of the global namespace, so an application that links
  // its own (possibly different) HIP is not disturbed.
  void* library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return missing_library(soname, "the HIP runtime");
  RuntimeApi api;
  {
    SymbolLoader symbols(library);
    JITCACHE_HIP_RUNTIME_FUNCTIONS(JITCACHE_HIP_LOAD)
    symbols.load(api.hipMalloc, "hipMalloc");
    if (!symbols.missing().empty())
      return Error(ErrorCode::runtime_missing,
                   soname + " is too old: it lacks " + symbols.missing());
  }
  // hipRTC was part of libamdhip64 until ROCm 6 split it into libhiprtc.
  void* rtc_library = library;
  if (!dlsym(library, "hiprtcCompileProgram") &&
      !(rtc_library = dlopen(k_hiprtc_soname, RTLD_NOW | RTLD_LOCAL)))
    return missing_library(k_hiprtc_soname, "hipRTC");
  SymbolLoader symbols(rtc_library);
  JITCACHE_HIPRTC_FUNCTIONS(JITCACHE_HIP_LOAD)
  if (!symbols.missing().empty())
    return Error(ErrorCode::runtime_missing, "hipRTC is too old: it lacks " + symbols.missing());
  api.runtime_file = library_file(reinterpret_cast<const void*>(api.hipGetDeviceCount));
  api.hiprtc_file = library_file(reinterpret_cast<const void*>(api.hiprtcCompileProgram));
  return api;
}

#undef JITCACHE_HIP_LOAD

Expected<const RuntimeApi*> runtime() {
  static const Expected<RuntimeApi> loaded = open_runtime(k_runtime_soname);
  return loaded_once(loaded);
}

Expected<const ComgrApi*> comgr() {
  static const Expected<ComgrApi> loaded = open_comgr();
  return loaded_once(loaded);
}

namespace {

struct Probe {
  hipError_t rc = hipSuccess;
  int count = 0;
};

// The outcome of initialising the runtime, decided once per process: either what
// hipGetDeviceCount said, or an Error when the runtime is missing or did not answer in time.
const Expected<Probe>& probe() {
  static const Expected<Probe> result = []() -> Expected<Probe> {
    auto api = runtime();
    if (!api)
      return api.error();
    const RuntimeApi* table = *api; // lives until exit, so the thread may outlive this call
    auto answer = call_within<Probe>(k_init_limit, [table] {
      Probe p;
      p.rc = table->hipGetDeviceCount(&p.count);
      return p;
    });
    if (!answer)
      return Error(ErrorCode::runtime_error,
                   "hipGetDeviceCount did not return within " +
                       std::to_string(k_init_limit.count()) +
                       " s (a hung amdgpu driver?); HIP is not used again in this process");
    return *answer;
  }();
  return result;
}

} // namespace

Expected<int> device_count() {
  const auto& p = probe();
  if (!p)
    return p.error();
  if (p->rc != hipSuccess)
    return hip_error(**runtime(), "hipGetDeviceCount", p->rc);
  if (p->count <= 0)
    return Error(ErrorCode::no_device, "hipGetDeviceCount found no AMD GPU (0 devices)");
  return p->count;
}

Expected<void> runtime_ready() {
  const auto& p = probe();
  if (!p)
    return p.error();
  // hipErrorNoDevice and friends still mean the runtime finished initialising.
  return {};
}

} // namespace jitcache::hip
