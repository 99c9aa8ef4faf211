// The C API's OpenCL function (include/jitcache/jitcache.h) over jitcache::opencl.

#include "bindings/c/c_api.hpp"

#include <jitcache/opencl.hpp>

#include <algorithm>
#include <vector>

namespace jitcache::c_api {
namespace {

// A device of another context (or another platform) is refused before any build: OpenCL
// implementations differ in what they do with one, and a C caller deserves one clear error.
// Asking the runtime costs about 2 us, twice what the whole C API may add to a memory-tier hit,
// so a pair that passed is remembered, its context retained until jitcache_close (a released
// context's address could otherwise come back as another context).
jitcache_error check_device_in_context(jitcache_cache& cache, cl_context context,
                                       cl_device_id device) {
  if (was_checked(cache, context, device))
    return JITCACHE_OK;
  std::size_t size = 0;
  cl_int rc = clGetContextInfo(context, CL_CONTEXT_DEVICES, 0, nullptr, &size);
  std::vector<cl_device_id> devices(size / sizeof(cl_device_id));
  if (rc == CL_SUCCESS)
    rc = clGetContextInfo(context, CL_CONTEXT_DEVICES, size, devices.data(), nullptr);
  if (rc != CL_SUCCESS)
    return fail(Error(ErrorCode::runtime_error, "clGetContextInfo(CL_CONTEXT_DEVICES) failed (" +
                                                    std::to_string(rc) +
                                                    "): not a valid cl_context"));
  if (std::find(devices.begin(), devices.end(), device) == devices.end())
    return fail_argument("jitcache_cl_build_program: the device does not belong to the context");
  if (clRetainContext(context) == CL_SUCCESS)
    remember_checked(cache, context, device, std::shared_ptr<void>(context, [](void* c) {
                       clReleaseContext(static_cast<cl_context>(c));
                     }));
  return JITCACHE_OK;
}

} // namespace
} // namespace jitcache::c_api

using namespace jitcache;
using namespace jitcache::c_api;

extern "C" jitcache_error jitcache_cl_build_program(jitcache_cache* cache, cl_context context,
                                                    cl_device_id device, const char* source,
                                                    size_t source_len, const char* options,
                                                    cl_program* program, jitcache_info* info) {
  return guarded([&] {
    if (!cache || !context || !device || !source || !program)
      return fail_argument("jitcache_cl_build_program: cache, context, device, source and "
                           "program must not be NULL");
    if (source_len == 0)
      return fail_argument("jitcache_cl_build_program: empty source (source_len 0)");
    if (jitcache_error rc = check_device_in_context(*cache, context, device); rc != JITCACHE_OK)
      return rc;
    auto built =
        opencl::build_program(cache->cache, context, device, std::string_view(source, source_len),
                              options ? std::string_view(options) : std::string_view());
    if (!built)
      return fail(built.error());
    *program = built->program;
    fill_info(built->info, info);
    return succeed();
  });
}
