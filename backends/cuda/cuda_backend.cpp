#include <jitcache/cuda.hpp>

#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_compile.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/cuda_key.hpp"
#include "backends/cuda/cuda_metadata.hpp"
#include "core/cache_core.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"

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

// One string holding every argument of a request, each length-prefixed (lists counted), for
// HandleCache::hash_request. The current directory is included: relative paths depend on it.
std::string flatten(const Program& program) {
  std::string out;
  const auto add = [&out](std::string_view part) {
    const std::uint64_t size = part.size();
    out.append(reinterpret_cast<const char*>(&size), sizeof size);
    out.append(part);
  };
  std::error_code ec; // a removed current directory reads as empty here; the key step reports it
  add(std::filesystem::current_path(ec).string());
  add(program.name);
  add(program.source);
  add(std::to_string(program.options.size()));
  for (const std::string& option : program.options)
    add(option);
  add(std::to_string(program.headers.size()));
  for (const Header& header : program.headers) {
    add(header.name);
    add(header.content);
  }
  add(std::to_string(program.name_expressions.size()));
  for (const std::string& expression : program.name_expressions)
    add(expression);
  return out;
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

// Whether a stored entry that `use` failed on is to be evicted and rebuilt.
bool refused(const Error& error) {
  return error.code == ErrorCode::load_failed || error.code == ErrorCode::corrupt;
}

// Gets the entry for `key` through the tiers (compiling on a miss) and hands it to `use`. A
// stored entry that `use` refuses is counted as rejected, evicted and rebuilt; when a read-only
// tier still serves it, the rebuilt entry is compiled here and used without being stored.
template <typename T>
Expected<T> fetch(Cache& cache, const Key& key, const std::function<Expected<Entry>()>& compile,
                  BuildInfo& info, const std::function<Expected<T>(const Entry&)>& use) {
  auto found = cache.get_or_compile(key, compile, &info);
  if (!found)
    return std::move(found).error();
  auto used = use(found->entry);
  if (used || found->tier == "compile" || !refused(used.error()))
    return used;
  log::warn("stored CUDA binary " + key.digest.hex() + " (" + found->tier +
            " tier) refused: " + used.error().message + "; rebuilding it");
  cache.count(k_backend, counter::rejected);
  cache.evict(key);
  found = cache.get_or_compile(key, compile, &info);
  if (!found)
    return std::move(found).error();
  if (found->tier != "compile") {
    Stopwatch clock;
    auto entry = compile();
    if (!entry)
      return std::move(entry).error();
    found = Found{std::move(*entry), "compile"};
    info.outcome = Outcome::miss;
    info.tier = "compile";
    info.compile_ms = clock.ms();
    info.bytes = found->entry.payload.size();
  }
  info.note = "stored binary refused (" + used.error().message + "); rebuilt";
  return use(found->entry);
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
  return HandleCache::Handle(
      new LoadedModule{module, std::move(metadata->lowered_names), ptx},
      [driver_api](void* p) {
        auto* loaded = static_cast<LoadedModule*>(p);
        driver_api->cuModuleUnload(loaded->module);
        delete loaded;
      });
}

Module module_of(const HandleCache::Loaded& loaded, BuildInfo info) {
  const auto& state = *static_cast<const LoadedModule*>(loaded.handle.get());
  return Module{state.module, std::move(info), state.lowered_names, loaded.handle};
}

// How a request answered from the memory tier of loaded modules is reported.
BuildInfo memory_hit(const HandleCache::Loaded& loaded, const Stopwatch& total) {
  BuildInfo info;
  info.key = loaded.info.key;
  info.outcome = Outcome::hit;
  info.tier = "memory";
  info.device = loaded.info.device;
  info.bytes = loaded.info.bytes;
  info.total_ms = total.ms();
  if (static_cast<const LoadedModule*>(loaded.handle.get())->ptx)
    info.note = loaded.info.note;
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

  HandleCache& handles = cache.core().handles();
  // Every argument of the request: hashed for the memory tier, and part of the manifest's name.
  const std::string arguments = flatten(program);
  const auto request = HandleCache::hash_request(
      {"cuda.load_module",
       std::string_view(reinterpret_cast<const char*>(&context), sizeof context), arguments});
  if (auto loaded = handles.find(request))
    return module_of(*loaded, memory_hit(*loaded, total));

  // The key is built with NVRTC's remembered identity (NVRTC is not opened for a hit); a miss
  // opens it to compile, and should the library opened not be the one remembered, the key is
  // built again from what it really is.
  bool remembered = false;
  auto tools = toolchain_for_keys(cache.core(), &remembered);
  if (!tools)
    return tools.error();
  Expected<HandleCache::Loaded> loaded = Error();
  GuardedKey keyed;
  BuildInfo info;
  bool ran = false;
  for (bool stale = false;; stale = false) {
    auto target = context_target(**api, *tools);
    if (!target)
      return std::move(target).error();
    info = BuildInfo{};
    info.device = target->arch;
    const auto loaded_from = [&](std::string_view payload,
                                 std::string_view metadata) -> Expected<HandleCache::Loaded> {
      const Stopwatch clock;
      auto handle = load(**api, payload, metadata);
      info.load_ms = clock.ms();
      if (!handle)
        return std::move(handle).error();
      if (target->ptx) {
        log::write_once(LogLevel::warn, "cuda-ptx:" + target->arch,
                        "compute capability " + target->compute_capability + ": " +
                            ptx_note(target->arch));
        info.note += (info.note.empty() ? "" : "; ") + ptx_note(target->arch);
      }
      return HandleCache::Loaded{std::move(*handle), info};
    };

    // A remembered key's module is loaded while the stamps that prove the key are checked on
    // another thread (a heavy module's load, milliseconds, hides the hundreds of stat calls of
    // a CUB key). It is counted, and used, only once they held.
    detail::PendingKey pending = remembered_key(cache.core(), *tools, *target, program, arguments);
    std::optional<Digest> guessed_key;
    std::optional<std::string> tier; // the guessed key's entry was loaded from it, in place
    std::uint64_t compile_ns = 0, bytes = 0;
    Expected<HandleCache::Loaded> guessed = Error();
    if (const Key* guess = pending.guess()) {
      guessed_key = guess->digest;
      guessed = handles.get_or_load(
          {guess->digest, context, nullptr},
          [&]() -> Expected<HandleCache::Loaded> {
            info.key = guess->digest;
            Expected<HandleCache::Loaded> out =
                Error(ErrorCode::runtime_error, "not stored"); // not reported: the usual path
            tier = cache.core().use_stored(*guess, [&](const EntryView& entry) {
              compile_ns = entry.compile_ns;
              bytes = info.bytes = entry.payload.size();
              out = loaded_from(entry.payload, entry.metadata);
            });
            return out;
          },
          ran);
    }
    keyed = *pending.settle(); // building the key cannot fail
    if (guessed && keyed.key.digest == guessed_key) {
      loaded = std::move(guessed);
      if (ran)
        cache.core().count_hit(keyed.key, *tier, compile_ns, bytes, info);
      break;
    }
    // Not proven (a file changed, and the key with it), not stored, or refused: the usual path.
    info = BuildInfo{};
    info.device = target->arch;
    const Key& key = keyed.key;
    const auto compile = [&]() -> Expected<Entry> {
      auto real = toolchain();
      if (!real)
        return real.error();
      if (!(**real == *tools)) {
        stale = true;
        return Error(ErrorCode::runtime_error, "NVRTC changed since its identity was remembered");
      }
      return compile_entry(**nvrtc(), *target, program);
    };
    // A context belongs to one device, so the context alone tells where the module lives.
    loaded = handles.get_or_load(
        {key.digest, context, nullptr},
        [&] {
          return fetch<HandleCache::Loaded>(cache, key, compile, info, [&](const Entry& entry) {
            return loaded_from(entry.payload, entry.metadata);
          });
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
  handles.alias(request, *loaded, std::move(keyed.guards));
  if (!ran)
    return module_of(*loaded, memory_hit(*loaded, total));
  info.total_ms = total.ms();
  return module_of(*loaded, std::move(info));
}

Expected<Binary> compile(Cache& cache, std::string_view arch, const Program& program) {
  const Stopwatch total;
  if (auto valid = validate(program); !valid)
    return std::move(valid).error();
  auto tools = toolchain();
  if (!tools)
    return tools.error();
  auto target = arch_target(**tools, arch);
  if (!target)
    return std::move(target).error();
  const Key key = make_key(**tools, *target, cache.config(), program).first;
  const NvrtcApi& compiler = **nvrtc(); // loaded: toolchain() succeeded

  BuildInfo info;
  info.device = target->arch;
  auto binary = fetch<Binary>(
      cache, key, [&] { return compile_entry(compiler, *target, program); }, info,
      [](const Entry& entry) -> Expected<Binary> {
        auto metadata = read_metadata(entry.metadata);
        if (!metadata)
          return std::move(metadata).error();
        if (entry.payload.compare(0, k_elf_magic.size(), k_elf_magic) != 0)
          return Error(ErrorCode::corrupt, "the stored CUDA binary is not a cubin (ELF)");
        return Binary{entry.payload, metadata->target, std::move(metadata->lowered_names), {}};
      });
  if (!binary)
    return std::move(binary).error();
  info.total_ms = total.ms();
  binary->info = std::move(info);
  return binary;
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
    target = context_target(**api, **tools);
  } else {
    target = arch_target(**tools, arch);
  }
  if (!target)
    return std::move(target).error();
  return make_key(**tools, *target, config, program).first;
}

} // namespace jitcache::cuda
