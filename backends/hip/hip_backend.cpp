#include <jitcache/hip.hpp>

#include "backends/hip/hip_api.hpp"
#include "backends/hip/hip_compile.hpp"
#include "backends/hip/hip_error.hpp"
#include "backends/hip/hip_key.hpp"
#include "backends/hip/hip_metadata.hpp"
#include "backends/hip/hip_targets.hpp"
#include "core/cache_core.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/request.hpp"
#include "core/request_log.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

namespace jitcache::hip {

namespace {

constexpr const char* k_backend = "hip";

// What the memory tier keeps per (key, device): the module, unloaded when the last holder goes.
struct Loaded {
  const RuntimeApi* api = nullptr;
  hipModule_t module = nullptr;
  std::map<std::string, std::string> lowered_names;
  ~Loaded() {
    if (module) // a failed unload leaves nothing to do but leak
      static_cast<void>(api->hipModuleUnload(module));
  }
};

// The calling thread's device: HIP loads a module into the current device's context.
Expected<int> current_device(const RuntimeApi& api) {
  int device = 0;
  if (hipError_t rc = api.hipGetDevice(&device); rc != hipSuccess)
    return hip_error(api, "hipGetDevice", rc);
  return device;
}

// Why a stored entry cannot be used for `target` (code corrupt), or its lowered names: the code
// object must be an AMDGPU ELF for exactly that target, and the lowered names readable.
Expected<std::map<std::string, std::string>> usable(const EntryView& entry,
                                                    const std::string& target) {
  if (auto ok = check_code_object(entry.payload, target); !ok)
    return ok.error();
  return decode_lowered_names(entry.metadata);
}

// hipRTC's code object of `program` for `target`, when the libraries opened are the ones `tools`
// describes (the key was built with it); otherwise `stale` is set and nothing is compiled.
Expected<Entry> compile_checked(const Toolchain& tools, const std::string& target,
                                const Program& program, bool& stale) {
  auto real = toolchain();
  if (!real)
    return real.error();
  if (!(**real == tools)) {
    stale = true;
    return Error(ErrorCode::runtime_error,
                 "hipRTC or comgr changed since their identity was remembered");
  }
  return compile_entry(**runtime(), target, program);
}

// Runs `attempt` with the toolchain keys are built with: the one the user tier remembers first
// (so that a hit opens neither libamdhip64 nor comgr); when its compile finds that the libraries
// opened are not the ones remembered (`stale`), once more with what they really are.
template <typename T>
Expected<T>
with_toolchain(Cache& cache,
               const std::function<Expected<T>(const Toolchain&, bool& stale)>& attempt) {
  bool remembered = false;
  auto tools = toolchain_for_keys(detail::core_of(cache), &remembered);
  if (!tools)
    return tools.error();
  bool stale = false;
  auto result = attempt(*tools, stale);
  if (!stale || !remembered)
    return result;
  log::info("hipRTC or comgr is not the library whose identity was remembered; building the key "
            "again");
  auto real = toolchain();
  if (!real)
    return real.error();
  stale = false;
  return attempt(**real, stale);
}

// The device's properties (hipGetDeviceProperties).
Expected<hipDeviceProp_t> device_properties(int device) {
  auto count = device_count(); // bounds the runtime's initialisation
  if (!count)
    return count.error();
  if (device < 0 || device >= *count)
    return Error(ErrorCode::no_device, "HIP device " + std::to_string(device) +
                                           " does not exist (" + std::to_string(*count) +
                                           " device(s): 0.." + std::to_string(*count - 1) + ")");
  const RuntimeApi& api = **runtime();
  hipDeviceProp_t properties{};
  if (hipError_t rc = api.hipGetDeviceProperties(&properties, device); rc != hipSuccess)
    return hip_error(api, "hipGetDeviceProperties", rc);
  return properties;
}

// The device's target id as the runtime reports it (gcnArchName), not yet canonical.
Expected<std::string> device_arch(int device) {
  auto properties = device_properties(device);
  if (!properties)
    return std::move(properties).error();
  return std::string(properties->gcnArchName);
}

// The core path's compile: `compile_checked` as a detail::Compiler.
detail::Compiler compiler(const Toolchain& tools, const std::string& target, const Program& program,
                          bool& stale) {
  return [&tools, &target, &program, &stale]() -> Expected<detail::Compiled> {
    auto entry = compile_checked(tools, target, program, stale);
    if (!entry)
      return std::move(entry).error();
    return detail::Compiled{std::move(*entry), {}, {}, {}};
  };
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
  tuning::Device out{k_backend,
                     name,
                     {{"device_name", name},
                      {"target", *target},
                      {"compute_units", std::to_string(properties->multiProcessorCount)}}};
  out.identity.insert(out.identity.end(), fields->begin(), fields->end());
  return out;
}

Expected<Key> make_key(const Config& config, const Program& program, std::string_view target) {
  if (auto ok = check_program(program); !ok)
    return ok.error();
  auto tools = toolchain();
  if (!tools)
    return tools.error();
  std::string canonical;
  if (target.empty()) {
    if (auto count = device_count(); !count)
      return count.error();
    auto device = current_device(**runtime());
    if (!device)
      return device.error();
    auto own = device_target(*device);
    if (!own)
      return own.error();
    canonical = *own;
  } else {
    auto valid = canonical_target(target, (*tools)->targets);
    if (!valid)
      return valid.error();
    canonical = *valid;
  }
  return make_key(**tools, canonical, config, program).first;
}

Expected<CodeObject> compile(Cache& cache, std::string_view target, const Program& program) {
  Stopwatch total;
  if (auto ok = check_program(program); !ok)
    return ok.error();
  detail::CacheCore& core = detail::core_of(cache);
  const std::string request = detail::flatten_request(program);
  return with_toolchain<CodeObject>(
      cache, [&](const Toolchain& tools, bool& stale) -> Expected<CodeObject> {
        auto canonical = canonical_target(target, tools.targets);
        if (!canonical)
          return canonical.error();
        const Key key = remembered_key(core, tools, *canonical, program, request).key;
        BuildInfo info;
        info.device = *canonical;
        std::optional<CodeObject> code;
        auto got = core.obtain(
            key, compiler(tools, *canonical, program, stale),
            [&](const EntryView& entry) -> Expected<void> {
              auto names = usable(entry, *canonical);
              if (!names)
                return std::move(names).error();
              code = CodeObject{std::string(entry.payload), *canonical, std::move(*names), {}};
              return {};
            },
            info);
        if (!got)
          return std::move(got).error();
        detail::record_request(cache.config(), key,
                               [&] { return detail::describe_request(program, *canonical); });
        info.total_ms = total.ms();
        code->info = std::move(info);
        return std::move(*code);
      });
}

Expected<Module> load_module(Cache& cache, const Program& program) {
  Stopwatch total;
  if (auto ok = check_program(program); !ok)
    return ok.error();
  using Handles = detail::HandleCache;
  detail::CacheCore& core = detail::core_of(cache);
  auto& handles = core.handles();

  const auto hand_out = [&](const Handles::Loaded& loaded, BuildInfo info) {
    const auto* held = static_cast<const Loaded*>(loaded.handle.get());
    info.total_ms = total.ms();
    return Module{held->module, std::move(info), held->lowered_names, loaded.handle};
  };

  if (auto count = device_count(); !count) // bounds the runtime's initialisation
    return count.error();
  const RuntimeApi& api = **runtime();
  auto device = current_device(api);
  if (!device)
    return device.error();
  // A repeated identical request skips key building (header reads included). Every argument
  // of the request: hashed for the memory tier, and part of the manifest's name.
  const std::string arguments = detail::flatten_request(program);
  const auto request = Handles::hash_request(
      {"hip.load_module", std::string_view(reinterpret_cast<const char*>(&*device), sizeof *device),
       arguments});
  if (auto loaded = handles.find(request))
    return hand_out(*loaded, core.memory_hit(k_backend, loaded->info));

  auto arch = device_arch(*device);
  if (!arch)
    return arch.error();
  return with_toolchain<Module>(
      cache, [&](const Toolchain& tools, bool& stale) -> Expected<Module> {
        auto target = canonical_target(*arch, tools.targets);
        if (!target)
          return target.error();
        GuardedKey keyed = remembered_key(core, tools, *target, program, arguments);
        const Key& key = keyed.key;
        bool ran = false;
        // HIP has one primary context per device, so the device ordinal stands for the context.
        const Handles::Slot slot{
            key.digest, nullptr,
            reinterpret_cast<const void*>(static_cast<std::uintptr_t>(*device))};
        auto loaded = handles.get_or_load(
            slot,
            [&]() -> Expected<Handles::Loaded> {
              BuildInfo info;
              info.device = *target;
              auto held = std::make_shared<Loaded>();
              held->api = &api;
              const detail::EntryReceiver use = [&](const EntryView& entry) -> Expected<void> {
                auto names = usable(entry, *target);
                if (!names)
                  return std::move(names).error();
                const Stopwatch load;
                if (hipError_t rc = api.hipModuleLoadData(&held->module, entry.payload.data());
                    rc != hipSuccess) {
                  Error error = hip_error(api, "hipModuleLoadData", rc);
                  if (rejects_image(rc))
                    error.code = ErrorCode::load_failed;
                  return error;
                }
                info.load_ms = load.ms();
                held->lowered_names = std::move(*names);
                return {};
              };
              if (auto got = core.obtain(key, compiler(tools, *target, program, stale), use, info,
                                         detail::CacheCore::Memory::skip);
                  !got)
                return std::move(got).error();
              return Handles::Loaded{std::move(held), std::move(info)};
            },
            ran);
        if (!loaded)
          return loaded.error();
        detail::record_request(cache.config(), key,
                               [&] { return detail::describe_request(program, *target); });
        handles.alias(request, *loaded, std::move(keyed.guards));
        if (!ran)
          return hand_out(*loaded, core.memory_hit(k_backend, loaded->info));
        return hand_out(*loaded, loaded->info);
      });
}

} // namespace jitcache::hip
