#include <jitcache/opencl.hpp>

#include "backends/opencl/opencl_key.hpp"
#include "backends/opencl/opencl_runtime.hpp"
#include "core/engine/pipeline.hpp"

#include <string_view>

namespace jitcache::opencl {

Expected<Key> make_key(const Config& config, cl_device_id device, std::string_view source,
                       std::string_view options) {
  auto id = identity(device);
  if (!id)
    return std::move(id).error();
  return key_for(*id, config, source, options);
}

Expected<tuning::Device> tuning_device(cl_device_id device) {
  auto id = identity(device);
  if (!id)
    return std::move(id).error();
  tuning::Device out{"opencl", id->device_name, id->device};
  out.identity.insert(out.identity.end(), id->toolchain.begin(), id->toolchain.end());
  return out;
}

Expected<Program> build_program(Cache& cache, cl_context context, cl_device_id device,
                                std::string_view source, std::string_view options) {
  Runtime runtime(cache, context, device, source, options);
  auto answer = detail::serve_request(cache, runtime);
  if (!answer)
    return std::move(answer).error();
  auto program = static_cast<cl_program>(answer->handle.get());
  clRetainProgram(program);
  return Program{program, std::move(answer->info)};
}

} // namespace jitcache::opencl
