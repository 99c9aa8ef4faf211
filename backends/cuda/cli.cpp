// The CUDA backend as the command-line tool sees it: a device's primary context, one build
// (or a compile-only build for --arch), facts.
#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/cuda_key.hpp"
#include "backends/cuda/cuda_runtime.hpp"
#include "backends/cuda/cuda_targets.hpp"
#include "core/engine/backend.hpp"
#include "core/engine/pipeline.hpp"
#include "core/key/includes.hpp"
#include "core/record/request_replay.hpp"

#include <jitcache/cuda.hpp>

#include <map>

namespace jitcache {

using detail::Backend;
using detail::BuildRequest;
using detail::split_options;

namespace {

// NVRTC takes one option per element: the CLI's --options string is split like a shell would.
cuda::Program program_of(const BuildRequest& request) {
  cuda::Program program;
  program.source = request.source;
  program.name = request.file;
  program.options = split_options(request.options);
  return program;
}

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

class CudaBackend final : public Backend {
public:
  std::string name() const override { return "cuda"; }

  Expected<BuildInfo> build(Cache& cache, const BuildRequest& request) override {
    const cuda::Program program = program_of(request);
    if (!request.arch.empty()) {
      auto binary = cuda::compile(cache, request.arch, program);
      if (!binary)
        return std::move(binary).error();
      return binary->info;
    }
    if (auto current = make_current(request.device); !current)
      return std::move(current).error();
    auto module = cuda::load_module(cache, program);
    if (!module)
      return std::move(module).error();
    return module->info;
  }

  bool claims_target(const std::string& target) const override {
    return target.rfind("sm_", 0) == 0 || target.rfind("compute_", 0) == 0;
  }

  Expected<void> check_target(const std::string& target) override {
    auto tools = cuda::toolchain();
    if (!tools)
      return tools.error();
    if (auto known = cuda::arch_target(**tools, target); !known)
      return std::move(known).error();
    return {};
  }

  Expected<BuildInfo> replay(Cache& cache, const detail::RequestRecord& record,
                             const std::string& target, int,
                             const std::filesystem::path&) override {
    auto program = detail::replayed_program<cuda::Program>(
        record,
        [&](const auto& program) { return cuda::make_key(cache.config(), program, record.device); },
        [&](const auto& program) {
          cuda::Runtime runtime(cache.config(), program, record.device);
          return detail::remembered_current_key(cache, runtime);
        });
    if (!program)
      return program.error();
    auto binary = cuda::compile(cache, target.empty() ? record.device : target, *program);
    if (!binary)
      return std::move(binary).error();
    return binary->info;
  }

  Expected<Key> key(const Config& config, const BuildRequest& request) override {
    if (request.arch.empty())
      if (auto current = make_current(request.device); !current)
        return std::move(current).error();
    return cuda::make_key(config, program_of(request), request.arch);
  }

  std::vector<std::pair<std::string, std::string>> facts(const Config& config) override {
    std::vector<std::pair<std::string, std::string>> out;
    if (auto tools = cuda::toolchain()) {
      std::string archs;
      for (int arch : (*tools)->archs)
        archs += (archs.empty() ? "sm_" : " sm_") + std::to_string(arch);
      out.emplace_back("NVRTC", (*tools)->version + " (" + (*tools)->build + ")");
      out.emplace_back("NVRTC targets", archs);
    } else {
      out.emplace_back("NVRTC", tools.error().message);
    }
    if (auto api = cuda::driver()) {
      out.emplace_back("driver", version_text((*api)->version));
      int count = 0;
      (*api)->cuDeviceGetCount(&count);
      for (int i = 0; i < count; ++i)
        out.emplace_back("device " + std::to_string(i), describe_device(**api, i));
    } else {
      out.emplace_back("driver", api.error().message);
    }
    // The driver's own cache of JIT-compiled PTX is listed with the other runtime caches
    // (core/engine/runtime_caches).
    auto setting = config.variables.find("CUDA_CACHE_DISABLE");
    out.emplace_back("CUDA_CACHE_DISABLE", setting == config.variables.end()
                                               ? "unset (the driver caches JIT-compiled PTX)"
                                               : setting->second);
    return out;
  }

private:
  // Makes device `index`'s primary context current. It is retained for the rest of the process:
  // the modules loaded into it stay in the Cache's memory tier until the Cache goes.
  Expected<void> make_current(int index) {
    auto api = cuda::driver();
    if (!api)
      return api.error();
    auto known = m_contexts.find(index);
    if (known == m_contexts.end()) {
      int count = 0;
      if (CUresult rc = (*api)->cuDeviceGetCount(&count); rc != CUDA_SUCCESS)
        return cuda::driver_error(**api, "cuDeviceGetCount", rc);
      if (index < 0 || index >= count)
        return Error(ErrorCode::invalid_argument, "--device " + std::to_string(index) +
                                                      " does not exist (" + std::to_string(count) +
                                                      " CUDA device(s))");
      CUdevice device = 0;
      CUcontext context = nullptr;
      if (CUresult rc = (*api)->cuDeviceGet(&device, index); rc != CUDA_SUCCESS)
        return cuda::driver_error(**api, "cuDeviceGet", rc);
      if (CUresult rc = (*api)->cuDevicePrimaryCtxRetain(&context, device); rc != CUDA_SUCCESS)
        return cuda::driver_error(**api, "cuDevicePrimaryCtxRetain", rc);
      known = m_contexts.emplace(index, context).first;
    }
    if (CUresult rc = (*api)->cuCtxSetCurrent(known->second); rc != CUDA_SUCCESS)
      return cuda::driver_error(**api, "cuCtxSetCurrent", rc);
    return {};
  }

  static std::string describe_device(const cuda::DriverApi& api, int index) {
    CUdevice device = 0;
    char name[256] = {};
    int major = 0, minor = 0;
    if (CUresult rc = api.cuDeviceGet(&device, index); rc != CUDA_SUCCESS)
      return cuda::driver_error(api, "cuDeviceGet", rc).message;
    api.cuDeviceGetName(name, sizeof name, device);
    api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    return std::string(name) + " (compute capability " + std::to_string(major) + "." +
           std::to_string(minor) + ")";
  }

  std::map<int, CUcontext> m_contexts; ///< device index -> retained primary context
};

} // namespace

std::unique_ptr<Backend> detail::make_cuda_backend() {
  return std::make_unique<CudaBackend>();
}

} // namespace jitcache
