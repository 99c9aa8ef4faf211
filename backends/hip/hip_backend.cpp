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
                        const Program& program, const RuntimeApi& api, BuildInfo& info,
                        const std::string& rejected) {
  const std::string note = info.note;
  auto found = cache.get_or_compile(
      key, [&] { return compile_program(api, target, program); }, &info);
  info.note = note;
  if (!found || info.outcome == Outcome::miss ||
      (found->entry.payload != rejected && !unusable(found->entry, target)))
    return found;
  Stopwatch clock;
  auto entry = compile_program(api, target, program);
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
                       const Program& program, const RuntimeApi& api, BuildInfo& info) {
  auto found = cache.get_or_compile(
      key, [&] { return compile_program(api, target, program); }, &info);
  if (!found || info.outcome == Outcome::miss) // a fresh compile is checked by compile_program
    return found;
  const auto why = unusable(found->entry, target);
  if (!why)
    return found;
  reject(cache, key, *why, info);
  return replace(cache, key, target, program, api, info, found->entry.payload);
}

std::map<std::string, std::string> lowered_names_of(const Found& found) {
  auto names = decode_lowered_names(found.entry.metadata);
  return names ? std::move(*names) : std::map<std::string, std::string>();
}

// Every byte of a request and the device, for the memory tier's fast path: each field
// length-delimited by hash_request, the variable-length lists flattened with their lengths.
detail::HandleCache::RequestHash request_hash(const Program& program, int device) {
  std::string lists;
  const auto add = [&](std::string_view field) {
    lists += std::to_string(field.size());
    lists += ':';
    lists += field;
  };
  for (const std::string& option : program.options)
    add(option);
  lists += '|';
  for (const Header& header : program.headers) {
    add(header.name);
    add(header.content);
  }
  lists += '|';
  for (const std::string& expression : program.name_expressions)
    add(expression);
  return detail::HandleCache::hash_request(
      {k_backend, std::string_view(reinterpret_cast<const char*>(&device), sizeof device),
       program.name, program.source, lists});
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
  auto table = target_table();
  if (!table)
    return table.error();
  return canonical_target(properties.gcnArchName, **table);
}

Expected<Key> make_key(const Config& config, const Program& program, std::string_view target) {
  if (auto ok = check_program(program); !ok)
    return ok.error();
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
    auto table = target_table();
    if (!table)
      return table.error();
    auto valid = canonical_target(target, **table);
    if (!valid)
      return valid.error();
    canonical = *valid;
  }
  return key_for(config, canonical, program);
}

Expected<CodeObject> compile(Cache& cache, std::string_view target, const Program& program) {
  Stopwatch total;
  if (auto ok = check_program(program); !ok)
    return ok.error();
  auto table = target_table();
  if (!table)
    return table.error();
  auto canonical = canonical_target(target, **table);
  if (!canonical)
    return canonical.error();
  auto api = runtime();
  if (!api)
    return api.error();
  auto key = key_for(cache.config(), *canonical, program);
  if (!key)
    return key.error();
  BuildInfo info;
  auto found = obtain(cache, *key, *canonical, program, **api, info);
  if (!found)
    return found.error();
  info.device = *canonical;
  info.total_ms = total.ms();
  return CodeObject{std::move(found->entry.payload), *canonical, lowered_names_of(*found),
                    std::move(info)};
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
  // A repeated identical request skips key building (header reads included).
  const auto request = request_hash(program, *device);
  if (auto loaded = handles.find(request))
    return memory_hit(*loaded);

  auto target = device_target(*device);
  if (!target)
    return target.error();
  auto keyed = key_and_dependencies(cache.config(), *target, program);
  if (!keyed)
    return keyed.error();
  const Key* key = &keyed->first;

  bool ran = false;
  // HIP has one primary context per device, so the device ordinal stands for the context.
  const Handles::Slot slot{key->digest, nullptr,
                           reinterpret_cast<const void*>(static_cast<std::uintptr_t>(*device))};
  auto loaded = handles.get_or_load(
      slot,
      [&]() -> Expected<Handles::Loaded> {
        BuildInfo info;
        auto found = obtain(cache, *key, *target, program, api, info);
        if (!found)
          return found.error();
        Stopwatch load;
        hipModule_t module = nullptr;
        hipError_t rc = api.hipModuleLoadData(&module, found->entry.payload.data());
        if (rc != hipSuccess && info.outcome == Outcome::hit && rejects_image(rc)) {
          reject(cache, *key, hip_error(api, "hipModuleLoadData", rc).message, info);
          found = replace(cache, *key, *target, program, api, info, found->entry.payload);
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
  handles.alias(request, *loaded, guards_of(keyed->second));
  if (!ran)
    return memory_hit(*loaded);
  return hand_out(*loaded, loaded->info);
}

} // namespace jitcache::hip
