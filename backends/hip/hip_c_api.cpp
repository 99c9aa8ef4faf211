// The C API's HIP functions (include/jitcache/jitcache.h) over jitcache::hip.

#include "bindings/c/c_api.hpp"

#include <jitcache/hip.hpp>

using namespace jitcache;
using namespace jitcache::c_api;

extern "C" {

jitcache_error jitcache_hip_load_module(jitcache_cache* cache, const jitcache_program* program,
                                        hipModule_t* module, const char** lowered_names,
                                        jitcache_info* info) {
  return guarded([&] {
    if (!cache || !module)
      return fail_argument("jitcache_hip_load_module: cache and module must not be NULL");
    if (jitcache_error rc = check_program(program); rc != JITCACHE_OK)
      return rc;
    return hand_out_module(*cache, *program,
                           hip::load_module(cache->cache, to_program<hip::Program>(*program)),
                           module, lowered_names, info);
  });
}

jitcache_error jitcache_hip_compile(jitcache_cache* cache, const char* target,
                                    const jitcache_program* program, void** binary,
                                    size_t* binary_size, const char** lowered_names,
                                    jitcache_info* info) {
  return guarded([&] {
    if (!cache || !target || !binary || !binary_size)
      return fail_argument(
          "jitcache_hip_compile: cache, target, binary and binary_size must not be NULL");
    if (jitcache_error rc = check_program(program); rc != JITCACHE_OK)
      return rc;
    return hand_out_binary(*cache, *program,
                           hip::compile(cache->cache, target, to_program<hip::Program>(*program)),
                           &hip::CodeObject::code, binary, binary_size, lowered_names, info);
  });
}

} // extern "C"
