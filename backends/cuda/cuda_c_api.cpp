// The C API's CUDA functions (include/jitcache/jitcache.h) over jitcache::cuda.

#include "bindings/c/c_api.hpp"

#include <jitcache/cuda.hpp>

using namespace jitcache;
using namespace jitcache::c_api;

extern "C" {

jitcache_error jitcache_cuda_load_module(jitcache_cache* cache, const jitcache_program* program,
                                         CUmodule* module, const char** lowered_names,
                                         jitcache_info* info) {
  return guarded([&] {
    if (!cache || !module)
      return fail_argument("jitcache_cuda_load_module: cache and module must not be NULL");
    if (jitcache_error rc = check_program(program); rc != JITCACHE_OK)
      return rc;
    return hand_out_module(*cache, *program,
                           cuda::load_module(cache->cache, to_program<cuda::Program>(*program)),
                           module, lowered_names, info);
  });
}

jitcache_error jitcache_cuda_compile(jitcache_cache* cache, const char* arch,
                                     const jitcache_program* program, void** binary,
                                     size_t* binary_size, const char** lowered_names,
                                     jitcache_info* info) {
  return guarded([&] {
    if (!cache || !arch || !binary || !binary_size)
      return fail_argument(
          "jitcache_cuda_compile: cache, arch, binary and binary_size must not be NULL");
    if (jitcache_error rc = check_program(program); rc != JITCACHE_OK)
      return rc;
    return hand_out_binary(*cache, *program,
                           cuda::compile(cache->cache, arch, to_program<cuda::Program>(*program)),
                           &cuda::Binary::cubin, binary, binary_size, lowered_names, info);
  });
}

} // extern "C"
