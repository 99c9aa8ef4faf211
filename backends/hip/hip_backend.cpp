#include <jitcache/hip.hpp>

#include "backends/hip/hip_api.hpp"
#include "backends/hip/hip_error.hpp"
#include "backends/hip/hip_key.hpp"
#include "backends/hip/hip_runtime.hpp"
#include "backends/hip/hip_targets.hpp"
#include "core/cohort/cohort.hpp"
#include "core/engine/pipeline.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

namespace jitcache::hip {

namespace {

// The device's target id as the runtime reports it (gcnArchName), not yet canonical.
Expected<std::string> device_arch(int device) {
  auto properties = device_properties(device);
  if (!properties)
    return std::move(properties).error();
  return std::string(properties->gcnArchName);
}

} // namespace

Expected<hipFunction_t> Module::function(std::string_view name) const {
  auto api = runtime();
  if (!api)
    return api.error();
  const auto lowered = lowered_names.find(std::string(name));
  const std::string symbol = lowered == lowered_names.end() ? std::string(name) : lowered->second;
  hipFunction_t function = nullptr;
  if (hipError_t rc = (*api)->hipModuleGetFunction(&function, module, symbol.c_str());
      rc != hipSuccess) {
    Error error = hip_error(**api, "hipModuleGetFunction", rc);
    error.message += " (symbol " + symbol + ")";
    return error;
  }
  return function;
}

Expected<std::vector<std::string>> supported_targets() {
  auto table = target_table();
  if (!table)
    return table.error();
  return (*table)->describe();
}

Expected<std::string> device_target(int device) {
  auto arch = device_arch(device);
  if (!arch)
    return arch.error();
  auto table = target_table();
  if (!table)
    return table.error();
  return canonical_target(*arch, **table);
}

Expected<tuning::Device> tuning_device() {
  if (auto count = device_count(); !count)
    return count.error();
  auto device = current_device(**runtime());
  if (!device)
    return device.error();
  auto properties = device_properties(*device);
  if (!properties)
    return std::move(properties).error();
  auto target = device_target(*device);
  if (!target)
    return target.error();
  auto fields = toolchain_fields();
  if (!fields)
    return fields.error();
  const std::string name = properties->name;
  tuning::Device out{"hip",
                     name,
                     {{"device_name", name},
                      {"target", *target},
                      {"compute_units", std::to_string(properties->multiProcessorCount)}}};
  out.identity.insert(out.identity.end(), fields->begin(), fields->end());
  return out;
}

Expected<Key> make_key(const Config& config, const Program& program, std::string_view target) {
  Runtime runtime(config, program, target);
  return detail::current_key(runtime);
}

Expected<CodeObject> compile(Cache& cache, std::string_view target, const Program& program) {
  if (target.empty()) { // the runtime would build for the current device instead
    auto table = target_table();
    if (!table)
      return table.error();
    return canonical_target(target, **table).error();
  }
  Runtime runtime(cache.config(), program, target);
  auto answer = detail::serve_request(cache, runtime);
  if (!answer)
    return std::move(answer).error();
  CodeObject code = std::move(*static_cast<CodeObject*>(answer->handle.get()));
  code.info = std::move(answer->info);
  return code;
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

std::vector<Expected<CodeObject>> compile_together(Cache& cache, cohort::Exchange& exchange,
                                                   const std::vector<Offline>& requests,
                                                   const cohort::Options& options,
                                                   cohort::Report* report) {
  return detail::compile_together<CodeObject, Runtime>(cache, exchange, requests, options, report);
}

} // namespace jitcache::hip
