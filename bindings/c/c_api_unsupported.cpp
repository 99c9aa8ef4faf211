// The C API's functions of the backends this library was built without: each says so
// (JITCACHE_ERR_UNSUPPORTED), so that include/jitcache/jitcache.h is the same in every build.
// Compiled into the shared library only, where JITCACHE_HAVE_<BACKEND> says what was built.

#include "bindings/c/c_api.hpp"

using namespace jitcache::c_api;

#if !defined(JITCACHE_HAVE_OPENCL) || !defined(JITCACHE_HAVE_CUDA) || !defined(JITCACHE_HAVE_HIP)
namespace {

jitcache_error not_built(const char* backend) {
  return fail_with(JITCACHE_ERR_UNSUPPORTED,
                   std::string("jitcache was built without the ") + backend + " backend");
}

} // namespace
#endif

extern "C" {

#ifndef JITCACHE_HAVE_OPENCL
jitcache_error jitcache_cl_build_program(jitcache_cache*, struct _cl_context*,
                                         struct _cl_device_id*, const char*, size_t, const char*,
                                         struct _cl_program**, jitcache_info*) {
  return guarded([] { return not_built("OpenCL"); });
}
#endif

#ifndef JITCACHE_HAVE_CUDA
jitcache_error jitcache_cuda_load_module(jitcache_cache*, const jitcache_program*,
                                         struct CUmod_st**, const char**, jitcache_info*) {
  return guarded([] { return not_built("CUDA"); });
}

jitcache_error jitcache_cuda_compile(jitcache_cache*, const char*, const jitcache_program*, void**,
                                     size_t*, const char**, jitcache_info*) {
  return guarded([] { return not_built("CUDA"); });
}
#endif

#ifndef JITCACHE_HAVE_HIP
jitcache_error jitcache_hip_load_module(jitcache_cache*, const jitcache_program*,
                                        struct ihipModule_t**, const char**, jitcache_info*) {
  return guarded([] { return not_built("HIP"); });
}

jitcache_error jitcache_hip_compile(jitcache_cache*, const char*, const jitcache_program*, void**,
                                    size_t*, const char**, jitcache_info*) {
  return guarded([] { return not_built("HIP"); });
}
#endif

} // extern "C"
