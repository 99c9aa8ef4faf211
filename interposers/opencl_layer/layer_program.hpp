#pragma once

#include <CL/cl_icd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

namespace jitcache::opencl_layer {

/// The program the application holds for one it created from source. Its first member is a
/// dispatch pointer, as the ICD loader requires of every object; it points at the layer's own
/// table, so a call that reaches it through the object rather than the layer still unwraps it.
///
/// Why a program of the layer's own: the options, and so the key, are known only at
/// clBuildProgram, after the application already holds its program, and OpenCL cannot put a
/// binary into an existing program. On a hit the program answering for it is one created from
/// the stored binary (`built`); the application's handle cannot change, so it names this object,
/// which forwards each call to the program that answers: `built` after a hit, else `source` (the
/// application's own, built by the runtime itself on a miss or when the layer steps aside).
struct LayerProgram {
  const cl_icd_dispatch* dispatch; ///< the layer's table: must stay the first member
  cl_program source;               ///< the application's, from its clCreateProgramWithSource
  cl_context context;
  std::string text;                       ///< the source, as the runtime concatenated it
  std::atomic<cl_program> built{nullptr}; ///< from the stored binary, after a hit
  std::atomic<cl_uint> references{1};     ///< the application's
  std::atomic<cl_uint> kernels{0};        ///< live kernels created from it, as far as seen
  std::mutex mutex;                       ///< guards `log` and `log_device`
  /// After a hit: the build log of the compile that made the stored binary for `log_device`,
  /// when it said something; CL_PROGRAM_BUILD_LOG answers with it (a program built from a binary
  /// has a log of its own: on PoCL, empty unless PoCL's cache holds the compile's).
  std::string log;
  cl_device_id log_device = nullptr;

  /// The program that answers for this one now.
  cl_program current() const {
    cl_program b = built.load();
    return b ? b : source;
  }
};

/// The layer's dispatch table (layer.cpp), which marks its programs.
extern cl_icd_dispatch g_dispatch;

/// `program` as the layer's own, or nullptr when it is the runtime's (created by a call the
/// layer does not wrap). Reads the first word of `program`, which every ICD object has.
inline LayerProgram* as_layer(cl_program program) {
  if (!program)
    return nullptr;
  auto* candidate = reinterpret_cast<LayerProgram*>(program);
  return candidate->dispatch == &g_dispatch ? candidate : nullptr;
}

/// The runtime's program that answers for `program`: itself when it is not the layer's.
inline cl_program unwrap(cl_program program) {
  LayerProgram* own = as_layer(program);
  return own ? own->current() : program;
}

/// The application's handle for a runtime program: the layer's program `kernel` was created
/// from, else `program` unchanged.
cl_program program_of_kernel(cl_kernel kernel, cl_program program);

/// Notes that `kernel` was created from `program` (the layer's, or null for the runtime's: a
/// kernel at an address reused from one of the layer's programs is forgotten).
void kernel_created(cl_kernel kernel, LayerProgram* program);

/// Called before the application releases `kernel` once: when that release is its last, the
/// kernel is forgotten and its program may go.
void kernel_releasing(cl_kernel kernel);

/// Drops one of the application's references; the last one, once no kernel seen is left, frees
/// `program` and releases the runtime's programs it held.
void release(LayerProgram* program);

} // namespace jitcache::opencl_layer
