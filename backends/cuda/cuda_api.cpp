#include "backends/cuda/cuda_api.hpp"

#include "backends/cuda/cuda_error.hpp"
#include "core/support/shared_library.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

namespace jitcache::cuda {

using detail::library_file;
using detail::loaded_once;
using detail::SymbolLoader;

namespace {

Expected<DriverApi> load_driver() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return Error(ErrorCode::runtime_missing,
                 std::string("the CUDA driver (libcuda.so.1) could not be opened: ") + dlerror());
  DriverApi api;
  SymbolLoader symbols(library);
#define JITCACHE_CUDA_LOAD(fn) symbols.load(api.fn, JITCACHE_CUDA_STR(fn));
  JITCACHE_CUDA_DRIVER_FUNCTIONS(JITCACHE_CUDA_LOAD)
  if (!symbols.missing().empty())
    return Error(ErrorCode::runtime_missing,
                 "the CUDA driver (libcuda.so.1) is too old: it lacks " + symbols.missing());
  if (CUresult rc = api.cuInit(0); rc != CUDA_SUCCESS)
    return driver_error(api, "cuInit", rc);
  if (CUresult rc = api.cuDriverGetVersion(&api.version); rc != CUDA_SUCCESS)
    return driver_error(api, "cuDriverGetVersion", rc);
  return api;
}

Expected<NvrtcApi> load_nvrtc() {
  const std::string dir = JITCACHE_CUDA_LIBRARY_DIR;
  const std::string candidates[] = {JITCACHE_NVRTC_SONAME, "libnvrtc.so",
                                    dir + "/" + JITCACHE_NVRTC_SONAME, dir + "/libnvrtc.so"};
  void* library = nullptr;
  std::string tried;
  for (const std::string& name : candidates) {
    if ((library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)))
      break;
    tried += (tried.empty() ? "" : ", ") + name;
  }
  if (!library)
    return Error(ErrorCode::runtime_missing, "NVRTC could not be opened (tried " + tried + ")");
  NvrtcApi api;
  SymbolLoader symbols(library);
  JITCACHE_CUDA_NVRTC_FUNCTIONS(JITCACHE_CUDA_LOAD)
#undef JITCACHE_CUDA_LOAD
  if (!symbols.missing().empty())
    return Error(ErrorCode::runtime_missing, "NVRTC is too old: it lacks " + symbols.missing());
  api.file = library_file(reinterpret_cast<const void*>(api.nvrtcVersion)).path;
  return api;
}

} // namespace

Expected<const DriverApi*> driver() {
  static const Expected<DriverApi> loaded = load_driver();
  return loaded_once(loaded);
}

Expected<const NvrtcApi*> nvrtc() {
  static const Expected<NvrtcApi> loaded = load_nvrtc();
  return loaded_once(loaded);
}

} // namespace jitcache::cuda
