#pragma once

#include "backends/opencl/opencl_runtime.hpp"

#include <CL/cl.h>

#include <string>

namespace jitcache::opencl_layer {

/// The OpenCL backend's request (opencl::Runtime) for a clBuildProgram the layer serves: keyed,
/// looked up, loaded and stored exactly as jitcache::opencl::build_program does, except that
///  - a compile is the application's own clBuildProgram of its own program, with its own
///    arguments, so a miss answers it exactly as the runtime does (status, log, error code);
///  - each request gets a program of its own: nothing is shared through the memory tier of
///    handles (two programs of the application are two programs of the runtime), the entries
///    are (the memory tier of entries).
/// The arguments must outlive the object.
class LayerRuntime final : public opencl::Runtime {
public:
  LayerRuntime(Cache& cache, cl_context context, cl_device_id device, std::string_view source,
               const std::string& options, cl_program program, cl_uint num_devices,
               const cl_device_id* device_list, const char* given_options);

  std::optional<detail::Place> place() const override { return std::nullopt; }
  /// The backend's compile, without its refresh at flush: the layer flushes at exit, and the
  /// refresh is a build whose compiler is by then being torn down by its own exit handlers.
  Expected<detail::Compiled> compile(const Key& key, Handle& handle) override;
  Expected<Handle> load(const EntryView& entry, std::string& note) override;

  /// Whether the application's clBuildProgram ran (a compile), and what it returned.
  bool built() const { return m_built; }
  cl_int result() const { return m_result; }
  /// The program the last load created from a stored binary; null when none did.
  cl_program loaded() const { return m_loaded; }
  /// The build log the last loaded entry kept of its compile (opencl::Metadata::log): empty when
  /// it said nothing or none was kept.
  const std::string& loaded_log() const { return m_loaded_log; }

protected:
  Expected<cl_program> build_from_source() override;

private:
  const cl_program m_program;
  const cl_uint m_num_devices;
  const cl_device_id* const m_device_list;
  const char* const m_given_options;
  bool m_built = false;
  cl_int m_result = CL_SUCCESS;
  cl_program m_loaded = nullptr;
  std::string m_loaded_log;
};

} // namespace jitcache::opencl_layer
