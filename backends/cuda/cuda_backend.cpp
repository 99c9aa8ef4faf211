#include <jitcache/cuda.hpp>

#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_compile.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/cuda_key.hpp"
#include "backends/cuda/cuda_metadata.hpp"
#include "core/cache_core.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/request.hpp"
#include "core/request_log.hpp"

#include <jitcache/version.hpp>

#include <filesystem>
#include <functional>

namespace jitcache::cuda {

namespace {

using detail::HandleCache;

constexpr const char* k_backend = "cuda";
constexpr std::string_view k_elf_magic = "\177ELF"; // a cubin is an ELF file

// A module jitcache loaded; unloaded when the last holder (the memory tier, Modules) lets go.
struct LoadedModule {
  CUmodule module = nullptr;
  std::map<std::string, std::string> lowered_names;
  bool ptx = false; // the driver JIT-compiled it
};

Expected<void> validate(const Program& program) {
  if (program.source.empty())
    return Error(ErrorCode::invalid_argument, "empty CUDA source for program " + program.name);
  for (const std::string& option : program.options)
    if (option.rfind("-arch", 0) == 0 || option.rfind("--gpu-architecture", 0) == 0)
      return Error(ErrorCode::invalid_argument,
                   "option '" + option +
                       "': jitcache chooses the architecture (the device's, or the one given to "
                       "compile)");
  return {};
}

std::string ptx_note(const std::string& arch) {
  return "the device is newer than NVRTC can target: PTX for " + arch +
         " is JIT-compiled by the driver at load (the driver's cache, CUDA_CACHE_PATH, applies)";
}

Expected<Metadata> read_metadata(std::string_view stored) {
  auto metadata = decode_metadata(stored);
  if (!metadata)
    return Error(ErrorCode::corrupt, "the stored CUDA entry's metadata cannot be read");
  return *metadata;
}

// Loads a stored cubin or PTX with its stored metadata; both may be views into the user tier's
// map. PTX is stored without the NUL that ends it, so it is copied into a string that has one.
Expected<HandleCache::Handle> load(const DriverApi& api, std::string_view payload,
                                   std::string_view stored_metadata) {
  auto metadata = read_metadata(stored_metadata);
  if (!metadata)
    return std::move(metadata).error();
  const bool ptx = metadata->format == "ptx";
  const std::string text = ptx ? std::string(payload) : std::string();
  CUmodule module = nullptr;
  if (CUresult rc = api.cuModuleLoadData(&module, ptx ? text.c_str() : payload.data());
      rc != CUDA_SUCCESS) {
    Error error = driver_error(api, "cuModuleLoadData", rc);
    if (!context_failure(rc)) // the driver's codes for a bad image vary (INVALID_IMAGE, _PTX, ...)
      error.code = ErrorCode::load_failed;
    return error;
  }
  const DriverApi* driver_api = &api; // the table lives for the whole process
  return HandleCache::Handle(new LoadedModule{module, std::move(metadata->lowered_names), ptx},
                             [driver_api](void* p) {
                               auto* loaded = static_cast<LoadedModule*>(p);
                               driver_api->cuModuleUnload(loaded->module);
                               delete loaded;
                             });
}

// Hands a stored entry to load(): the module to `module`, the load's time (and for a PTX
// target, the note that the driver JIT-compiles it) to `info`.
detail::EntryReceiver loader(const DriverApi& api, const Target& target,
                             HandleCache::Handle& module, BuildInfo& info) {
  return [&api, &target, &module, &info](const EntryView& entry) -> Expected<void> {
    const Stopwatch clock;
    auto handle = load(api, entry.payload, entry.metadata);
    info.load_ms = clock.ms();
    if (!handle)
      return std::move(handle).error();
    module = std::move(*handle);
    if (target.ptx) {
      log::write_once(LogLevel::warn, "cuda-ptx:" + target.arch,
                      "compute capability " + target.compute_capability + ": " +
                          ptx_note(target.arch));
      info.note += (info.note.empty() ? "" : "; ") + ptx_note(target.arch);
    }
    return {};
  };
}

Module module_of(const HandleCache::Loaded& loaded, BuildInfo info) {
  const auto& state = *static_cast<const LoadedModule*>(loaded.handle.get());
  return Module{state.module, std::move(info), state.lowered_names, loaded.handle};
}

// How a request answered from the memory tier of loaded modules is reported: a PTX module
// keeps saying that the driver JIT-compiled it.
BuildInfo memory_hit(detail::CacheCore& core, const HandleCache::Loaded& loaded,
                     const Stopwatch& total) {
  BuildInfo info = core.memory_hit(k_backend, loaded.info);
  if (static_cast<const LoadedModule*>(loaded.handle.get())->ptx)
    info.note = loaded.info.note;
  info.total_ms = total.ms();
  return info;
}

} // namespace

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
  const Stopwatch total;
  if (auto valid = validate(program); !valid)
    return std::move(valid).error();
  auto api = driver();
  if (!api)
    return api.error();
  auto current = current_context(**api);
  if (!current)
    return std::move(current).error();
  const CUcontext context = *current;

  detail::CacheCore& core = detail::core_of(cache);
  HandleCache& handles = core.handles();
  // Every argument of the request: hashed for the memory tier, and part of the manifest's name.
  const std::string arguments = detail::flatten_request(program);
  const auto request = HandleCache::hash_request(
      {"cuda.load_module",
       std::string_view(reinterpret_cast<const char*>(&context), sizeof context), arguments});
  if (auto loaded = handles.find(request))
    return module_of(*loaded, memory_hit(core, *loaded, total));

  // Packages first, with the NVRTC identities their entries were made with (see
  // packaged_toolchains()): a packaged kernel is loaded without opening NVRTC.
  auto capability = context_capability(**api);
  if (!capability)
    return std::move(capability).error();
  const std::optional<Toolchain> known = recalled_toolchain(core);
  Expected<HandleCache::Loaded> loaded = Error();
  GuardedKey keyed;
  bool ran = true;
  const Target native = native_target(*capability);
  for (const Toolchain& packaged : packaged_toolchains(core, native, known)) {
    GuardedKey candidate = *remembered_key(core, packaged, native, program, arguments).settle();
    const HandleCache::Slot slot{candidate.key.digest, context, nullptr};
    if (auto found = handles.find(slot)) {
      loaded = std::move(*found);
      ran = false;
    } else {
      BuildInfo info;
      info.device = native.arch;
      HandleCache::Handle module;
      detail::CacheCore::Refusals refusals;
      auto got = core.serve(candidate.key, loader(**api, native, module, info), info, refusals);
      if (!got || !*got)
        continue; // an error is met again, and reported, on the way below
      core.count_hit(candidate.key, **got, info);
      loaded = HandleCache::Loaded{module, info};
      handles.insert(slot, *loaded);
    }
    keyed = std::move(candidate);
    break;
  }

  // Then the key is built with NVRTC's remembered identity (NVRTC is not opened for a hit); a
  // miss opens it to compile, and should the library opened not be the one remembered, the key
  // is built again from what it really is (the loop's second and last round).
  bool remembered = known.has_value();
  Expected<Toolchain> tools = known ? Expected<Toolchain>(*known) : Error();
  if (!loaded && !known && !(tools = toolchain_for_keys(core, &remembered)))
    return tools.error();
  for (bool stale = false; !loaded; stale = false) {
    auto target = device_target(*tools, *capability);
    if (!target)
      return std::move(target).error();
    BuildInfo info;
    info.device = target->arch;
    HandleCache::Handle module;
    const detail::EntryReceiver use = loader(**api, *target, module, info);

    // The speculative step: a remembered key's module is loaded while the stamps that prove
    // the key are checked on another thread (a heavy module's load, milliseconds, hides the
    // hundreds of stat calls of a CUB key). The hit is counted, and the module used, only once
    // they held; otherwise it is dropped and the key built from the files takes the usual path.
    detail::PendingKey pending = remembered_key(core, *tools, *target, program, arguments);
    std::optional<HandleCache::Loaded> speculative;
    std::optional<detail::Served> served;
    detail::CacheCore::Refusals refusals; // what the speculative step refused is not tried again
    if (const Key* guess = pending.guess()) {
      if ((speculative = handles.find(HandleCache::Slot{guess->digest, context, nullptr}))) {
        ran = false;
      } else if (auto got = core.serve(*guess, use, info, refusals); got && *got) {
        served = **got;
        speculative = HandleCache::Loaded{module, info};
      }
    }
    const std::optional<Digest> guessed =
        pending.guess() ? std::optional<Digest>(pending.guess()->digest) : std::nullopt;
    keyed = *pending.settle(); // building the key cannot fail
    if (speculative && keyed.key.digest == guessed) {
      if (served) {
        core.count_hit(keyed.key, *served, speculative->info);
        handles.insert(HandleCache::Slot{keyed.key.digest, context, nullptr}, *speculative);
      }
      loaded = std::move(*speculative);
      break;
    }

    const std::string note = info.note; // a refusal of the guessed key's entry is reported
    info = BuildInfo{};
    info.device = target->arch;
    info.note = note;
    const Key& key = keyed.key;
    const detail::Compiler compile = [&]() -> Expected<detail::Compiled> {
      auto real = toolchain();
      if (!real)
        return real.error();
      if (!(**real == *tools)) {
        stale = true;
        return Error(ErrorCode::runtime_error, "NVRTC changed since its identity was remembered");
      }
      auto entry = compile_entry(**nvrtc(), *target, program);
      if (!entry)
        return std::move(entry).error();
      return detail::Compiled{std::move(*entry), {}, {}, {}};
    };
    // A context belongs to one device, so the context alone tells where the module lives.
    loaded = handles.get_or_load(
        {key.digest, context, nullptr},
        [&]() -> Expected<HandleCache::Loaded> {
          // The refusals apply when the key proved to be the guessed one (the same entries).
          auto carried = keyed.key.digest == guessed ? refusals : detail::CacheCore::Refusals{};
          if (auto got = core.obtain(key, compile, use, info, detail::CacheCore::Memory::skip,
                                     std::move(carried));
              !got)
            return std::move(got).error();
          return HandleCache::Loaded{module, info};
        },
        ran);
    if (!stale || !remembered)
      break;
    log::info("NVRTC is not the library whose identity was remembered; building the key again");
    remembered = false;
    auto real = toolchain();
    if (!real)
      return real.error();
    tools = **real;
  }
  if (!loaded)
    return std::move(loaded).error();
  detail::record_request(cache.config(), keyed.key,
                         [&] { return detail::describe_request(program, loaded->info.device); });
  handles.alias(request, *loaded, std::move(keyed.guards));
  if (!ran)
    return module_of(*loaded, memory_hit(core, *loaded, total));
  BuildInfo info = loaded->info;
  info.total_ms = total.ms();
  return module_of(*loaded, std::move(info));
}

Expected<Binary> compile(Cache& cache, std::string_view arch, const Program& program) {
  const Stopwatch total;
  if (auto valid = validate(program); !valid)
    return std::move(valid).error();
  detail::CacheCore& core = detail::core_of(cache);
  BuildInfo info;
  std::optional<Binary> binary;
  const detail::EntryReceiver use = [&](const EntryView& entry) -> Expected<void> {
    auto metadata = read_metadata(entry.metadata);
    if (!metadata)
      return std::move(metadata).error();
    if (entry.payload.substr(0, k_elf_magic.size()) != k_elf_magic)
      return Error(ErrorCode::corrupt, "the stored CUDA binary is not a cubin (ELF)");
    binary = Binary{
        std::string(entry.payload), metadata->target, std::move(metadata->lowered_names), {}};
    return {};
  };
  const auto served = [&](const Key& key, const Target& target) {
    detail::record_request(cache.config(), key,
                           [&] { return detail::describe_request(program, target.arch); });
    info.total_ms = total.ms();
    binary->info = std::move(info);
    return std::move(*binary);
  };

  // Packages first, with the NVRTC identities their entries were made with (see
  // packaged_toolchains()): a packaged cubin is found without opening NVRTC.
  if (auto named = named_target(arch))
    for (const Toolchain& packaged : packaged_toolchains(core, *named, std::nullopt)) {
      const Key key = make_key(packaged, *named, cache.config(), program).first;
      info = BuildInfo{};
      info.device = named->arch;
      detail::CacheCore::Refusals refusals;
      if (auto got = core.serve(key, use, info, refusals); got && *got) {
        core.count_hit(key, **got, info);
        return served(key, *named);
      }
    }

  auto tools = toolchain();
  if (!tools)
    return tools.error();
  auto target = arch_target(**tools, arch);
  if (!target)
    return std::move(target).error();
  const Key key = make_key(**tools, *target, cache.config(), program).first;
  const NvrtcApi& compiler = **nvrtc(); // loaded: toolchain() succeeded
  info = BuildInfo{};
  info.device = target->arch;
  auto got = core.obtain(
      key,
      [&]() -> Expected<detail::Compiled> {
        auto entry = compile_entry(compiler, *target, program);
        if (!entry)
          return std::move(entry).error();
        return detail::Compiled{std::move(*entry), {}, {}, {}};
      },
      use, info);
  if (!got)
    return std::move(got).error();
  return served(key, *target);
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
  return tuning::Device{k_backend,
                        name,
                        {{"device_name", name},
                         {"compute_capability", std::to_string(*capability)},
                         {"driver_version", std::to_string((*api)->version)},
                         {"nvrtc_version", (*tools)->version},
                         {"nvrtc_build", (*tools)->build},
                         {"jitcache_version", k_version}}};
}

Expected<Key> make_key(const Config& config, const Program& program, std::string_view arch) {
  if (auto valid = validate(program); !valid)
    return std::move(valid).error();
  auto tools = toolchain();
  if (!tools)
    return tools.error();
  Expected<Target> target = Error();
  if (arch.empty()) {
    auto api = driver();
    if (!api)
      return api.error();
    auto capability = context_capability(**api);
    if (!capability)
      return std::move(capability).error();
    target = device_target(**tools, *capability);
  } else {
    target = arch_target(**tools, arch);
  }
  if (!target)
    return std::move(target).error();
  return make_key(**tools, *target, config, program).first;
}

} // namespace jitcache::cuda
