#include "interposers/opencl_layer/layer_program.hpp"

#include "interposers/opencl_layer/next_dispatch.hpp"

#include <mutex>
#include <unordered_map>

namespace jitcache::opencl_layer {

namespace {

// The kernels created from the layer's programs, for CL_KERNEL_PROGRAM. A kernel whose death is
// not seen (its last reference dropped by the runtime, after a command that used it) leaves a
// stale entry, overwritten or erased when a kernel is next created at its address: the map is
// right for every live kernel, which is all the application may ask about.
struct Kernels {
  std::mutex mutex;
  std::unordered_map<cl_kernel, LayerProgram*> programs;
};

Kernels& kernels() {
  static auto* k = new Kernels; // never destroyed: kernels may be released during exit
  return *k;
}

void destroy(LayerProgram* program) {
  if (cl_program built = program->built.load())
    g_next->clReleaseProgram(built);
  g_next->clReleaseProgram(program->source);
  delete program;
}

} // namespace

cl_program program_of_kernel(cl_kernel kernel, cl_program program) {
  Kernels& k = kernels();
  std::lock_guard lock(k.mutex);
  auto it = k.programs.find(kernel);
  return it == k.programs.end() ? program : reinterpret_cast<cl_program>(it->second);
}

void kernel_created(cl_kernel kernel, LayerProgram* program) {
  Kernels& k = kernels();
  LayerProgram* stale = nullptr;
  {
    std::lock_guard lock(k.mutex);
    auto it = k.programs.find(kernel);
    if (it != k.programs.end()) {
      stale = it->second;
      k.programs.erase(it);
    }
    if (program) {
      try {
        k.programs.emplace(kernel, program);
        program->kernels.fetch_add(1);
      } catch (...) { // no memory: CL_KERNEL_PROGRAM answers the runtime's program
      }
    }
  }
  // A kernel at this address died unseen: its program is kept (leaked) rather than freed here,
  // since its count of kernels is no longer exact.
  static_cast<void>(stale);
}

void kernel_releasing(cl_kernel kernel) {
  Kernels& k = kernels();
  LayerProgram* program = nullptr;
  {
    std::lock_guard lock(k.mutex);
    auto it = k.programs.find(kernel);
    if (it == k.programs.end())
      return;
    cl_uint count = 0;
    if (g_next->clGetKernelInfo(kernel, CL_KERNEL_REFERENCE_COUNT, sizeof count, &count, nullptr) !=
            CL_SUCCESS ||
        count != 1)
      return;
    program = it->second;
    k.programs.erase(it);
    // Decided under the lock, as release() does: the last of both counts frees it once.
    if (program->kernels.fetch_sub(1) != 1 || program->references.load() != 0)
      return;
  }
  destroy(program);
}

void release(LayerProgram* program) {
  Kernels& k = kernels();
  {
    std::lock_guard lock(k.mutex);
    if (program->references.fetch_sub(1) != 1 || program->kernels.load() != 0)
      return;
  }
  destroy(program);
}

} // namespace jitcache::opencl_layer
