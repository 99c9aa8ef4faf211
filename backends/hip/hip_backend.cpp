#include <jitcache/hip.hpp>

#include "backends/hip/hip_api.hpp"
#include "backends/hip/hip_metadata.hpp"
#include "backends/hip/hip_compile.hpp"
#include "backends/hip/hip_error.hpp"
#include "backends/hip/hip_key.hpp"
#include "backends/hip/hip_targets.hpp"
#include "core/cache_core.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"

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

// A stored code object that cannot be used: it goes, and the caller compiles afresh.
void reject(Cache& cache, const Key& key, const std::string& why, BuildInfo& info) {
  cache.evict(key);
  cache.count(k_backend, counter::rejected);
  info.note = "stored code object rejected (" + why + "); recompiled";
  log::warn("HIP: the stored code object for key " + key.digest.hex() + " was rejected (" + why +
            "); evicted it and compiling again");
}

// Why a stored entry cannot be used for `target`, or nullopt when it can: the code object must
// be an AMDGPU ELF for exactly that target, and the lowered names readable.
std::optional<std::string> unusable(const Entry& entry, const std::string& target) {
  if (auto ok = check_code_object(entry.payload, target); !ok)
    return ok.error().message;
  if (auto names = decode_lowered_names(entry.metadata); !names)
    return names.error().message;
  return std::nullopt;
}

// The code object compiled afresh after `rejected` was evicted. A tier that cannot be written
// (JITCACHE_READONLY, a system package) still holds the rejected one; when the lookup finds it
// again, the compile goes around the cache.
Expected<Found> replace(Cache& cache, const Key& key, const std::string& target,
                        const std::function<Expected<Entry>()>& compile, BuildInfo& info,
                        const std::string& rejected) {
  const std::string note = info.note;
  auto found = cache.get_or_compile(key, compile, &info);
  info.note = note;
  if (!found || info.outcome == Outcome::miss ||
      (found->entry.payload != rejected && !unusable(found->entry, target)))
    return found;
  Stopwatch clock;
  auto entry = compile();
  if (!entry)
    return entry.error();
  entry->compile_ns = clock.ns();
  cache.count(k_backend, counter::misses);
  cache.count(k_backend, counter::compiles);
  info.outcome = Outcome::miss;
  info.tier = "compile";
  info.compile_ms = entry->compile_ns / 1e6;
  info.bytes = entry->payload.size();
  return Found{std::move(*entry), "compile"};
}

// The code object for `key`: from a tier (if usable for `target`), or compiled. A stored one
// that is not usable is rejected and replaced.
Expected<Found> obtain(Cache& cache, const Key& key, const std::string& target,
                       const std::function<Expected<Entry>()>& compile, BuildInfo& info) {
  auto found = cache.get_or_compile(key, compile, &info);
  if (!found || info.outcome == Outcome::miss) // a fresh compile is checked by compile_program
    return found;
  const auto why = unusable(found->entry, target);
  if (!why)
    return found;
  reject(cache, key, *why, info);
  return replace(cache, key, target, compile, info, found->entry.payload);
}

std::map<std::string, std::string> lowered_names_of(const Found& found) {
  auto names = decode_lowered_names(found.entry.metadata);
  return names ? std::move(*names) : std::map<std::string, std::string>();
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
  return compile_program(**runtime(), target, program);
}

// Runs `attempt` with the toolchain keys are built with: the one the user tier remembers first
// (so that a hit opens neither libamdhip64 nor comgr); when its compile finds that the libraries
// opened are not the ones remembered (`stale`), once more with what they really are.
template <typename T>
Expected<T>
with_toolchain(Cache& cache,
               const std::function<Expected<T>(const Toolchain&, bool& stale)>& attempt) {
  bool remembered = false;
  auto tools = toolchain_for_keys(cache.core(), &remembered);
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

// The device's target id as the runtime reports it (gcnArchName), not yet canonical.
Expected<std::string> device_arch(int device) {
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
  return std::string(properties.gcnArchName);
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
  const std::string request = detail::request_arguments(program);
  return with_toolchain<CodeObject>(
      cache, [&](const Toolchain& tools, bool& stale) -> Expected<CodeObject> {
        auto canonical = canonical_target(target, tools.targets);
        if (!canonical)
          return canonical.error();
        const Key key = remembered_key(cache.core(), tools, *canonical, program, request).key;
        BuildInfo info;
        auto found = obtain(
            cache, key, *canonical,
            [&] { return compile_checked(tools, *canonical, program, stale); }, info);
        if (!found)
          return found.error();
        info.device = *canonical;
        info.total_ms = total.ms();
        return CodeObject{std::move(found->entry.payload), *canonical, lowered_names_of(*found),
                          std::move(info)};
      });
}

Expected<Module> load_module(Cache& cache, const Program& program) {
  Stopwatch total;
  if (auto ok = check_program(program); !ok)
    return ok.error();
  using Handles = detail::HandleCache;
  auto& handles = cache.core().handles();

  const auto hand_out = [&](const Handles::Loaded& loaded, BuildInfo info) {
    const auto* held = static_cast<const Loaded*>(loaded.handle.get());
    info.total_ms = total.ms();
    return Module{held->module, std::move(info), held->lowered_names, loaded.handle};
  };
  const auto memory_hit = [&](const Handles::Loaded& loaded) {
    BuildInfo info = loaded.info;
    info.outcome = Outcome::hit;
    info.tier = "memory";
    info.compile_ms = info.load_ms = 0;
    info.note.clear();
    cache.count(k_backend, std::string(counter::hits_prefix) + "memory");
    return hand_out(loaded, std::move(info));
  };

  if (auto count = device_count(); !count) // bounds the runtime's initialisation
    return count.error();
  const RuntimeApi& api = **runtime();
  auto device = current_device(api);
  if (!device)
    return device.error();
  // A repeated identical request skips key building (header reads included). Every argument
  // of the request: hashed for the memory tier, and part of the manifest's name.
  const std::string arguments = detail::request_arguments(program);
  const auto request = Handles::hash_request(
      {"hip.load_module", std::string_view(reinterpret_cast<const char*>(&*device), sizeof *device),
       arguments});
  if (auto loaded = handles.find(request))
    return memory_hit(*loaded);

  auto arch = device_arch(*device);
  if (!arch)
    return arch.error();
  return with_toolchain<Module>(
      cache, [&](const Toolchain& tools, bool& stale) -> Expected<Module> {
        auto target = canonical_target(*arch, tools.targets);
        if (!target)
          return target.error();
        GuardedKey keyed = remembered_key(cache.core(), tools, *target, program, arguments);
        const Key* key = &keyed.key;
        const auto compile = [&] { return compile_checked(tools, *target, program, stale); };

        bool ran = false;
        // HIP has one primary context per device, so the device ordinal stands for the context.
        const Handles::Slot slot{
            key->digest, nullptr,
            reinterpret_cast<const void*>(static_cast<std::uintptr_t>(*device))};
        auto loaded = handles.get_or_load(
            slot,
            [&]() -> Expected<Handles::Loaded> {
              BuildInfo info;
              auto found = obtain(cache, *key, *target, compile, info);
              if (!found)
                return found.error();
              Stopwatch load;
              hipModule_t module = nullptr;
              hipError_t rc = api.hipModuleLoadData(&module, found->entry.payload.data());
              if (rc != hipSuccess && info.outcome == Outcome::hit && rejects_image(rc)) {
                reject(cache, *key, hip_error(api, "hipModuleLoadData", rc).message, info);
                found = replace(cache, *key, *target, compile, info, found->entry.payload);
                if (!found)
                  return found.error();
                load = Stopwatch();
                rc = api.hipModuleLoadData(&module, found->entry.payload.data());
              }
              if (rc != hipSuccess)
                return hip_error(api, "hipModuleLoadData", rc);
              info.load_ms = load.ms();
              info.device = *target;
              auto held = std::make_shared<Loaded>();
              held->api = &api;
              held->module = module;
              held->lowered_names = lowered_names_of(*found);
              return Handles::Loaded{std::move(held), std::move(info)};
            },
            ran);
        if (!loaded)
          return loaded.error();
        handles.alias(request, *loaded, std::move(keyed.guards));
        if (!ran)
          return memory_hit(*loaded);
        return hand_out(*loaded, loaded->info);
      });
}

} // namespace jitcache::hip
