#include <jitcache/cuda.hpp>

#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/cuda_key.hpp"
#include "backends/cuda/cuda_runtime.hpp"
#include "core/cohort/cohort.hpp"
#include "core/engine/pipeline.hpp"

#include <jitcache/version.hpp>

#include <filesystem>
#include <functional>

namespace jitcache::cuda {

Expected<CUfunction> Module::function(std::string_view name) const {
  auto api = driver();
  if (!api)
    return api.error();
  const auto lowered = lowered_names.find(std::string(name));
  const std::string symbol = lowered != lowered_names.end() ? lowered->second : std::string(name);
  CUfunction function = nullptr;
  if (CUresult rc = (*api)->cuModuleGetFunction(&function, module, symbol.c_str());
      rc != CUDA_SUCCESS)
    return driver_error(**api, ("cuModuleGetFunction(" + symbol + ")").c_str(), rc);
  return function;
}

Expected<Module> load_module(Cache& cache, const Program& program) {
  Runtime runtime(cache.config(), program, {});
  auto answer = detail::serve_request(cache, runtime);
  if (!answer)
    return std::move(answer).error();
  const auto& loaded = *static_cast<const LoadedModule*>(answer->handle.get());
  return Module{loaded.module, std::move(answer->info), loaded.lowered_names,
                std::move(answer->handle)};
}

Expected<Binary> compile(Cache& cache, std::string_view arch, const Program& program) {
  if (arch.empty()) // the runtime would load into the current context instead
    return std::move(named_target(arch)).error();
  Runtime runtime(cache.config(), program, arch);
  auto answer = detail::serve_request(cache, runtime);
  if (!answer)
    return std::move(answer).error();
  Binary binary = std::move(*static_cast<Binary*>(answer->handle.get()));
  binary.info = std::move(answer->info);
  return binary;
}

Expected<tuning::Device> tuning_device() {
  auto api = driver();
  if (!api)
    return api.error();
  auto capability = context_capability(**api);
  if (!capability)
    return std::move(capability).error();
  CUdevice device = 0;
  if (CUresult rc = (*api)->cuCtxGetDevice(&device); rc != CUDA_SUCCESS)
    return driver_error(**api, "cuCtxGetDevice", rc);
  char name[256] = {};
  if (CUresult rc = (*api)->cuDeviceGetName(name, sizeof name - 1, device); rc != CUDA_SUCCESS)
    return driver_error(**api, "cuDeviceGetName", rc);
  auto tools = toolchain();
  if (!tools)
    return tools.error();
  return tuning::Device{"cuda",
                        name,
                        {{"device_name", name},
                         {"compute_capability", std::to_string(*capability)},
                         {"driver_version", std::to_string((*api)->version)},
                         {"nvrtc_version", (*tools)->version},
                         {"nvrtc_build", (*tools)->build},
                         {"jitcache_version", k_version}}};
}

Expected<Key> make_key(const Config& config, const Program& program, std::string_view arch) {
  Runtime runtime(config, program, arch);
  return detail::current_key(runtime);
}

std::vector<Expected<Binary>> compile_together(Cache& cache, cohort::Exchange& exchange,
                                               const std::vector<Offline>& requests,
                                               const cohort::Options& options,
                                               cohort::Report* report) {
  return detail::compile_together<Binary, Runtime>(cache, exchange, requests, options, report);
}

} // namespace jitcache::cuda
