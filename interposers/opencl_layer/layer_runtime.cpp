#include "interposers/opencl_layer/layer_runtime.hpp"

#include "backends/opencl/opencl_compile.hpp"
#include "backends/opencl/opencl_error.hpp"
#include "backends/opencl/opencl_metadata.hpp"
#include "interposers/opencl_layer/next_dispatch.hpp"

namespace jitcache::opencl_layer {

LayerRuntime::LayerRuntime(Cache& cache, cl_context context, cl_device_id device,
                           std::string_view source, const std::string& options, cl_program program,
                           cl_uint num_devices, const cl_device_id* device_list,
                           const char* given_options)
    : opencl::Runtime(cache, context, device, source, options), m_program(program),
      m_num_devices(num_devices), m_device_list(device_list), m_given_options(given_options) {}

Expected<LayerRuntime::Handle> LayerRuntime::load(const EntryView& entry, std::string& note) {
  auto handle = opencl::Runtime::load(entry, note);
  if (handle) {
    m_loaded = static_cast<cl_program>(handle->get());
    auto metadata = opencl::decode_metadata(entry.metadata);
    m_loaded_log = metadata ? std::move(metadata->log) : std::string();
  }
  return handle;
}

Expected<detail::Compiled> LayerRuntime::compile(const Key& key, Handle& handle) {
  auto compiled = opencl::Runtime::compile(key, handle);
  if (compiled)
    compiled->refresh = nullptr;
  return compiled;
}

Expected<cl_program> LayerRuntime::build_from_source() {
  m_built = true;
  // No callback: the layer tells the application's once the request is answered.
  m_result = g_next->clBuildProgram(m_program, m_num_devices, m_device_list, m_given_options,
                                    nullptr, nullptr);
  if (m_result != CL_SUCCESS)
    return opencl::cl_error("clBuildProgram", m_result, ErrorCode::compile_failed);
  g_next->clRetainProgram(m_program); // the handle's, released when the pipeline lets go
  return m_program;
}

} // namespace jitcache::opencl_layer
