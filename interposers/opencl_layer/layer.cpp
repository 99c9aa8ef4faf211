// libjitcache-opencl-layer.so: an OpenCL loader layer (cl_loader_layers) that serves the programs
// an application builds from source through jitcache, unchanged: OPENCL_LAYERS=<path to it>.
//
// The layer wraps the programs created by clCreateProgramWithSource (layer_program.hpp says
// why) and so takes every call that takes or returns a program: each unwraps the layer's
// programs, and CL_KERNEL_PROGRAM maps back. At clBuildProgram, a request for one device is
// served by the request pipeline with the OpenCL backend's runtime (layer_runtime.hpp): a hit
// answers with a program built from the stored binary; a miss is the application's own build.
// Whatever fails in the layer, the call goes to the runtime as the application made it.

#include "interposers/opencl_layer/layer_program.hpp"
#include "interposers/opencl_layer/layer_runtime.hpp"
#include "interposers/opencl_layer/next_dispatch.hpp"

#include "core/engine/cache_core.hpp"
#include "core/engine/pipeline.hpp"
#include "core/engine/store_handover.hpp"
#include "core/support/log.hpp"

#include <jitcache/cache.hpp>

#include <CL/cl_layer.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace jitcache::opencl_layer {

cl_icd_dispatch g_dispatch{};

namespace {

/// The name `jitcache stats` counts the layer's requests under.
constexpr const char* k_front_end = "opencl-layer";

// The layer's configuration and cache, made at the first program it sees. Never destroyed:
// flushed at exit (see flush_after_exit).
struct State {
  Config config = Config::from_environment();
  std::unique_ptr<Cache> cache;
};

void flush_after_exit();

// The layer's cache; null when the layer steps aside for the whole process: turned off
// (JITCACHE_OPENCL_LAYER=0), or jitcache's library is loaded (the application or a jitcache
// tool uses jitcache itself: a second cache in the process would open the same user tier again).
Cache* layer_cache() {
  static State* state = [] {
    auto* s = new State;
    if (!s->config.opencl_layer) {
      log::info("the OpenCL layer is loaded but turned off (JITCACHE_OPENCL_LAYER)");
    } else if (::dlsym(RTLD_DEFAULT, "jitcache_version")) {
      log::info("the OpenCL layer steps aside: this process uses jitcache's library itself");
    } else {
      // Always handed over (JITCACHE_OPENCL_STORE=detach): the layer's last flush is at exit,
      // when a compile in the process (reading a PoCL binary) would race the compiler's own exit
      // handlers, which tear it down.
      s->config.opencl_store = StoreMode::detach;
      if (!detail::store_worker()) { // nothing to hand over to: stores would be made at exit
        log::warn("the OpenCL layer finds no jitcache executable to store in the background; "
                  "it reads the cache but stores nothing");
        s->config.read_only = true;
      }
      s->cache = std::make_unique<Cache>(s->config);
      flush_after_exit(); // the counters of a run that compiles nothing
    }
    return s;
  }();
  return state->cache.get();
}

void flush_at_exit() {
  try {
    if (Cache* cache = layer_cache())
      cache->flush();
  } catch (...) {
  }
}

// Has the cache flushed at exit (its stores handed over, or made in the process) before the
// runtime's compiler is torn down: exit handlers run last registered first, and the compiler's
// own (LLVM's statics, made at its first compile) are registered as it compiles. So again after
// each compile: a flush with nothing left to do is cheap.
void flush_after_exit() {
  static std::mutex mutex;
  static unsigned registered = 0;
  std::lock_guard lock(mutex);
  if (registered < 1000 && std::atexit(flush_at_exit) == 0)
    ++registered;
}

// The one device a build is for, or null when it is for several (passed through: a jitcache
// request is for one device).
cl_device_id single_device(cl_context context, cl_uint num_devices,
                           const cl_device_id* device_list) {
  if (num_devices == 1 && device_list)
    return device_list[0];
  if (num_devices != 0 || device_list)
    return nullptr;
  cl_uint count = 0;
  if (g_next->clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, sizeof count, &count, nullptr) !=
          CL_SUCCESS ||
      count != 1)
    return nullptr;
  cl_device_id device = nullptr;
  if (g_next->clGetContextInfo(context, CL_CONTEXT_DEVICES, sizeof device, &device, nullptr) !=
      CL_SUCCESS)
    return nullptr;
  return device;
}

using Notify = void(CL_CALLBACK*)(cl_program, void*);

// A callback the runtime calls with its program, handed to the application with its own.
struct Trampoline {
  Notify notify;
  void* user_data;
  cl_program program;
};

void CL_CALLBACK trampoline(cl_program, void* data) {
  std::unique_ptr<Trampoline> t(static_cast<Trampoline*>(data));
  t->notify(t->program, t->user_data);
}

// The application's clBuildProgram of `own`, as it made it, on the program that answers for it
// (a rebuild after a hit is the runtime's build of the application's program).
cl_int pass_build(LayerProgram* own, cl_uint num_devices, const cl_device_id* device_list,
                  const char* options, Notify notify, void* user_data) {
  if (own->kernels.load() == 0) // after a hit, the stored program steps down
    if (cl_program built = own->built.exchange(nullptr))
      g_next->clReleaseProgram(built);
  {
    std::lock_guard lock(own->mutex); // the runtime's build: its log is the runtime's
    own->log.clear();
  }
  if (!notify)
    return g_next->clBuildProgram(own->current(), num_devices, device_list, options, nullptr,
                                  nullptr);
  auto t = std::make_unique<Trampoline>(
      Trampoline{notify, user_data, reinterpret_cast<cl_program>(own)});
  const cl_int rc = g_next->clBuildProgram(own->current(), num_devices, device_list, options,
                                           trampoline, t.get());
  if (rc == CL_SUCCESS || rc == CL_BUILD_PROGRAM_FAILURE)
    t.release(); // the runtime calls it (OpenCL 1.2: whether the build succeeded or not)
  return rc;
}

// What the request pipeline answered for `own`: the program from the stored binary becomes the
// one that answers (hit), or the application's own, built (miss). False when the answer is
// neither (another thread's program): the caller builds the application's program instead.
bool take(LayerProgram* own, const LayerRuntime& runtime, const detail::Answer& answer) {
  auto handed = static_cast<cl_program>(answer.handle.get());
  if (handed == own->source) {
    if (cl_program built = own->built.exchange(nullptr))
      g_next->clReleaseProgram(built);
    return true;
  }
  if (!handed || handed != runtime.loaded())
    return false;
  g_next->clRetainProgram(handed); // the layer's, beyond the pipeline's handle
  if (cl_program built = own->built.exchange(handed))
    g_next->clReleaseProgram(built);
  return true;
}

cl_int CL_API_CALL build_program(cl_program program, cl_uint num_devices,
                                 const cl_device_id* device_list, const char* options,
                                 Notify notify, void* user_data) {
  LayerProgram* own = as_layer(program);
  if (!own)
    return g_next->clBuildProgram(program, num_devices, device_list, options, notify, user_data);
  bool ran = false;
  cl_int result = CL_SUCCESS;
  try {
    Cache* cache = layer_cache();
    cl_device_id device = cache ? single_device(own->context, num_devices, device_list) : nullptr;
    if (cache && !device)
      log::debug("the OpenCL layer passes a build for several devices through");
    if (device && own->kernels.load() == 0) {
      const std::string given = options ? options : "";
      LayerRuntime runtime(*cache, own->context, device, own->text, given, own->source, num_devices,
                           device_list, options);
      auto answer = detail::serve_request(*cache, runtime);
      ran = runtime.built();
      result = runtime.result();
      if (ran)
        flush_after_exit();
      if (answer && take(own, runtime, *answer)) {
        detail::CacheCore& core = detail::core_of(*cache);
        const bool hit = answer->info.outcome == Outcome::hit;
        if (hit)
          core.count_hits(k_front_end, answer->info.tier);
        else
          core.count(k_front_end, Counter::misses);
        {
          std::lock_guard lock(own->mutex);
          own->log = hit ? runtime.loaded_log() : std::string();
          own->log_device = device;
        }
        if (notify)
          notify(program, user_data);
        return CL_SUCCESS;
      }
      if (!answer && !ran)
        log::info("the OpenCL layer passes a build through: " + answer.error().message);
    }
  } catch (const std::exception& e) {
    log::info(std::string("the OpenCL layer passes a build through: ") + e.what());
  } catch (...) {
  }
  if (ran) { // the application's build ran: its answer is the runtime's
    if (notify)
      notify(program, user_data);
    return result;
  }
  return pass_build(own, num_devices, device_list, options, notify, user_data);
}

cl_program CL_API_CALL create_program_with_source(cl_context context, cl_uint count,
                                                  const char** strings, const size_t* lengths,
                                                  cl_int* errcode_ret) {
  cl_int rc = CL_SUCCESS;
  cl_program source = g_next->clCreateProgramWithSource(context, count, strings, lengths, &rc);
  if (errcode_ret)
    *errcode_ret = rc;
  if (rc != CL_SUCCESS || !source || !layer_cache())
    return source;
  try {
    auto own = std::make_unique<LayerProgram>();
    own->dispatch = &g_dispatch;
    own->source = source;
    own->context = context;
    for (cl_uint i = 0; i < count; ++i)
      own->text.append(strings[i], lengths && lengths[i] ? lengths[i] : std::strlen(strings[i]));
    return reinterpret_cast<cl_program>(own.release());
  } catch (...) { // no memory for the layer's program: the runtime's, unwrapped
    return source;
  }
}

cl_int CL_API_CALL retain_program(cl_program program) {
  if (LayerProgram* own = as_layer(program)) {
    own->references.fetch_add(1);
    return CL_SUCCESS;
  }
  return g_next->clRetainProgram(program);
}

cl_int CL_API_CALL release_program(cl_program program) {
  if (LayerProgram* own = as_layer(program)) {
    release(own);
    return CL_SUCCESS;
  }
  return g_next->clReleaseProgram(program);
}

// A value the layer answers itself, copied as the runtime copies its own.
cl_int answer_value(const void* value, std::size_t size, std::size_t param_value_size,
                    void* param_value, std::size_t* param_value_size_ret) {
  if (param_value) {
    if (param_value_size < size)
      return CL_INVALID_VALUE;
    std::memcpy(param_value, value, size);
  }
  if (param_value_size_ret)
    *param_value_size_ret = size;
  return CL_SUCCESS;
}

cl_int CL_API_CALL get_program_info(cl_program program, cl_program_info param_name,
                                    size_t param_value_size, void* param_value,
                                    size_t* param_value_size_ret) {
  LayerProgram* own = as_layer(program);
  if (!own)
    return g_next->clGetProgramInfo(program, param_name, param_value_size, param_value,
                                    param_value_size_ret);
  switch (param_name) {
  case CL_PROGRAM_REFERENCE_COUNT: { // a kernel holds its program, as the runtimes count it
    const cl_uint count = own->references.load() + own->kernels.load();
    return answer_value(&count, sizeof count, param_value_size, param_value, param_value_size_ret);
  }
  // What the application created: its own program (a program from a binary has no source, and
  // its context and devices are the ones the application named).
  case CL_PROGRAM_SOURCE:
  case CL_PROGRAM_CONTEXT:
  case CL_PROGRAM_NUM_DEVICES:
  case CL_PROGRAM_DEVICES:
  case CL_PROGRAM_IL:
    return g_next->clGetProgramInfo(own->source, param_name, param_value_size, param_value,
                                    param_value_size_ret);
  default: // what the build made: the program that answers
    return g_next->clGetProgramInfo(own->current(), param_name, param_value_size, param_value,
                                    param_value_size_ret);
  }
}

cl_int CL_API_CALL get_program_build_info(cl_program program, cl_device_id device,
                                          cl_program_build_info param_name, size_t param_value_size,
                                          void* param_value, size_t* param_value_size_ret) {
  LayerProgram* own = as_layer(program);
  if (own && param_name == CL_PROGRAM_BUILD_LOG) { // after a hit: the log of the compile
    std::lock_guard lock(own->mutex);
    if (!own->log.empty() && device == own->log_device && own->built.load()) {
      if (param_value && param_value_size < own->log.size())
        return CL_INVALID_VALUE;
      if (param_value)
        std::memcpy(param_value, own->log.data(), own->log.size());
      if (param_value_size_ret)
        *param_value_size_ret = own->log.size();
      return CL_SUCCESS;
    }
  }
  return g_next->clGetProgramBuildInfo(unwrap(program), device, param_name, param_value_size,
                                       param_value, param_value_size_ret);
}

cl_kernel CL_API_CALL create_kernel(cl_program program, const char* kernel_name,
                                    cl_int* errcode_ret) {
  cl_kernel kernel = g_next->clCreateKernel(unwrap(program), kernel_name, errcode_ret);
  if (kernel)
    kernel_created(kernel, as_layer(program));
  return kernel;
}

cl_int CL_API_CALL create_kernels_in_program(cl_program program, cl_uint num_kernels,
                                             cl_kernel* kernels, cl_uint* num_kernels_ret) {
  const cl_int rc =
      g_next->clCreateKernelsInProgram(unwrap(program), num_kernels, kernels, num_kernels_ret);
  if (rc == CL_SUCCESS && kernels) {
    cl_uint made = num_kernels;
    if (num_kernels_ret)
      made = std::min(made, *num_kernels_ret);
    for (cl_uint i = 0; i < made; ++i)
      if (kernels[i])
        kernel_created(kernels[i], as_layer(program));
  }
  return rc;
}

cl_kernel CL_API_CALL clone_kernel(cl_kernel source_kernel, cl_int* errcode_ret) {
  cl_kernel kernel = g_next->clCloneKernel(source_kernel, errcode_ret);
  if (kernel)
    kernel_created(kernel, as_layer(program_of_kernel(source_kernel, nullptr)));
  return kernel;
}

cl_int CL_API_CALL release_kernel(cl_kernel kernel) {
  kernel_releasing(kernel);
  return g_next->clReleaseKernel(kernel);
}

cl_int CL_API_CALL get_kernel_info(cl_kernel kernel, cl_kernel_info param_name,
                                   size_t param_value_size, void* param_value,
                                   size_t* param_value_size_ret) {
  const cl_int rc = g_next->clGetKernelInfo(kernel, param_name, param_value_size, param_value,
                                            param_value_size_ret);
  if (rc == CL_SUCCESS && param_name == CL_KERNEL_PROGRAM && param_value &&
      param_value_size >= sizeof(cl_program)) {
    auto* program = static_cast<cl_program*>(param_value);
    *program = program_of_kernel(kernel, *program);
  }
  return rc;
}

cl_int CL_API_CALL compile_program(cl_program program, cl_uint num_devices,
                                   const cl_device_id* device_list, const char* options,
                                   cl_uint num_input_headers, const cl_program* input_headers,
                                   const char** header_include_names, Notify notify,
                                   void* user_data) {
  // Not served: the headers of a separate compile are programs, not files the key can read.
  std::vector<cl_program> headers(input_headers ? num_input_headers : 0);
  for (std::size_t i = 0; i < headers.size(); ++i)
    headers[i] = unwrap(input_headers[i]);
  LayerProgram* own = as_layer(program);
  if (own && own->kernels.load() == 0)
    if (cl_program built = own->built.exchange(nullptr))
      g_next->clReleaseProgram(built);
  std::unique_ptr<Trampoline> t;
  if (notify && own)
    t.reset(new Trampoline{notify, user_data, program});
  const cl_int rc = g_next->clCompileProgram(
      unwrap(program), num_devices, device_list, options, num_input_headers,
      input_headers ? headers.data() : nullptr, header_include_names, t ? trampoline : notify,
      t ? static_cast<void*>(t.get()) : user_data);
  if (t && (rc == CL_SUCCESS || rc == CL_COMPILE_PROGRAM_FAILURE))
    t.release();
  return rc;
}

cl_program CL_API_CALL link_program(cl_context context, cl_uint num_devices,
                                    const cl_device_id* device_list, const char* options,
                                    cl_uint num_input_programs, const cl_program* input_programs,
                                    Notify notify, void* user_data, cl_int* errcode_ret) {
  // Not served (the inputs are compiled programs, not sources); the result is the runtime's.
  std::vector<cl_program> inputs(input_programs ? num_input_programs : 0);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    inputs[i] = unwrap(input_programs[i]);
  return g_next->clLinkProgram(context, num_devices, device_list, options, num_input_programs,
                               input_programs ? inputs.data() : nullptr, notify, user_data,
                               errcode_ret);
}

cl_int CL_API_CALL set_program_release_callback(cl_program program, Notify notify,
                                                void* user_data) {
  LayerProgram* own = as_layer(program);
  if (!own || !notify)
    return g_next->clSetProgramReleaseCallback(unwrap(program), notify, user_data);
  // On the application's own program, which the layer releases last.
  auto t = std::make_unique<Trampoline>(Trampoline{notify, user_data, program});
  const cl_int rc = g_next->clSetProgramReleaseCallback(own->source, trampoline, t.get());
  if (rc == CL_SUCCESS)
    t.release();
  return rc;
}

cl_int CL_API_CALL set_program_specialization_constant(cl_program program, cl_uint spec_id,
                                                       size_t spec_size, const void* spec_value) {
  return g_next->clSetProgramSpecializationConstant(unwrap(program), spec_id, spec_size,
                                                    spec_value);
}

} // namespace

} // namespace jitcache::opencl_layer

using namespace jitcache::opencl_layer;

extern "C" {

__attribute__((visibility("default"))) CL_API_ENTRY cl_int CL_API_CALL
clGetLayerInfo(cl_layer_info param_name, size_t param_value_size, void* param_value,
               size_t* param_value_size_ret) {
  switch (param_name) {
  case CL_LAYER_API_VERSION: {
    const cl_layer_api_version version = CL_LAYER_API_VERSION_100;
    return answer_value(&version, sizeof version, param_value_size, param_value,
                        param_value_size_ret);
  }
#ifdef CL_LAYER_NAME
  case CL_LAYER_NAME: {
    static const char name[] = "jitcache";
    return answer_value(name, sizeof name, param_value_size, param_value, param_value_size_ret);
  }
#endif
  default:
    return CL_INVALID_VALUE;
  }
}

__attribute__((visibility("default"))) CL_API_ENTRY cl_int CL_API_CALL
clInitLayer(cl_uint num_entries, const cl_icd_dispatch* target_dispatch, cl_uint* num_entries_ret,
            const cl_icd_dispatch** layer_dispatch_ret) {
  constexpr cl_uint k_entries = sizeof(cl_icd_dispatch) / sizeof(void*);
  if (!target_dispatch || !num_entries_ret || !layer_dispatch_ret)
    return CL_INVALID_VALUE;
  // Every entry the layer does not take is the next one's, unchanged. A loader with a shorter
  // table than the layer's (older) leaves the rest null, as it would call none of them.
  const cl_uint copied = std::min(num_entries, k_entries);
  std::memcpy(&g_dispatch, target_dispatch, copied * sizeof(void*));
  g_next = target_dispatch;
  g_dispatch.clCreateProgramWithSource = create_program_with_source;
  g_dispatch.clRetainProgram = retain_program;
  g_dispatch.clReleaseProgram = release_program;
  g_dispatch.clBuildProgram = build_program;
  g_dispatch.clGetProgramInfo = get_program_info;
  g_dispatch.clGetProgramBuildInfo = get_program_build_info;
  g_dispatch.clCreateKernel = create_kernel;
  g_dispatch.clCreateKernelsInProgram = create_kernels_in_program;
  g_dispatch.clGetKernelInfo = get_kernel_info;
  g_dispatch.clReleaseKernel = release_kernel;
  g_dispatch.clCompileProgram = compile_program;
  g_dispatch.clLinkProgram = link_program;
  if (copied > offsetof(cl_icd_dispatch, clCloneKernel) / sizeof(void*))
    g_dispatch.clCloneKernel = clone_kernel;
  if (copied > offsetof(cl_icd_dispatch, clSetProgramReleaseCallback) / sizeof(void*))
    g_dispatch.clSetProgramReleaseCallback = set_program_release_callback;
  if (copied > offsetof(cl_icd_dispatch, clSetProgramSpecializationConstant) / sizeof(void*))
    g_dispatch.clSetProgramSpecializationConstant = set_program_specialization_constant;
  *num_entries_ret = k_entries;
  *layer_dispatch_ret = &g_dispatch;
  return CL_SUCCESS;
}

} // extern "C"
