#include <jitcache/opencl.hpp>

#include "backends/opencl/opencl_compile.hpp"
#include "backends/opencl/opencl_error.hpp"
#include "backends/opencl/opencl_key.hpp"
#include "core/cache_core.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace jitcache::opencl {

namespace {

constexpr const char* k_backend = "opencl";

// Whether `id` is a PoCL device whose own kernel cache is on (POCL_KERNEL_CACHE unset or true).
bool pocl_cache_on(const Identity& id, const Config& config) {
  const bool pocl = std::any_of(id.device.begin(), id.device.end(),
                                [](const auto& field) { return field.first == "pocl_build_hash"; });
  auto it = config.variables.find("POCL_KERNEL_CACHE");
  return pocl && (it == config.variables.end() || it->second != "0");
}

detail::HandleCache::Handle hold(cl_program program) {
  return detail::HandleCache::Handle(program, [](void* p) {
    clReleaseProgram(static_cast<cl_program>(p));
  });
}

Program hand_out(const detail::HandleCache::Loaded& loaded, BuildInfo info) {
  auto program = static_cast<cl_program>(loaded.handle.get());
  clRetainProgram(program);
  return Program{program, std::move(info)};
}

} // namespace

Expected<Key> make_key(const Config& config, cl_device_id device, std::string_view source,
                       std::string_view options) {
  auto id = identity(device);
  if (!id)
    return std::move(id).error();
  return key_for(*id, config, source, options);
}

Expected<Program> build_program(Cache& cache, cl_context context, cl_device_id device,
                                std::string_view source, std::string_view options_view) {
  Stopwatch total;
  if (!context || !device)
    return Error(ErrorCode::invalid_argument, "build_program: null context or device");
  if (source.empty())
    return Error(ErrorCode::invalid_argument, "build_program: empty source");
  auto& handles = cache.core().handles();

  const auto memory_hit = [&](const detail::HandleCache::Loaded& loaded) {
    BuildInfo info = loaded.info;
    info.outcome = Outcome::hit;
    info.tier = "memory";
    info.compile_ms = info.load_ms = 0;
    info.note.clear();
    info.total_ms = total.ms();
    cache.count(k_backend, std::string(counter::hits_prefix) + "memory");
    return hand_out(loaded, std::move(info));
  };

  // A repeated identical request skips key building (header reads included).
  const auto request = detail::HandleCache::hash_request(
      {std::string_view(reinterpret_cast<const char*>(&context), sizeof context),
       std::string_view(reinterpret_cast<const char*>(&device), sizeof device), options_view,
       source});
  if (auto loaded = handles.find(request))
    return memory_hit(*loaded);

  auto id = identity(device);
  if (!id)
    return std::move(id).error();
  const detail::GuardedKey keyed = remembered_key(cache.core(), *id, source, options_view);
  const Key* key = &keyed.key;
  const std::string options(options_view);

  bool ran = false;
  auto loaded = handles.get_or_load(
      {key->digest, context, device},
      [&]() -> Expected<detail::HandleCache::Loaded> {
        BuildInfo info;
        info.key = key->digest;
        info.device = id->device_name;
        // On a miss, waits while another process compiles the same key (CacheCore::claim).
        auto claim = cache.core().claim(*key);
        if (auto& found = claim.found) {
          Stopwatch load;
          auto program = from_binary(context, device, found->entry.payload, options);
          if (program) {
            info.outcome = Outcome::hit;
            info.tier = found->tier;
            info.load_ms = load.ms();
            info.bytes = found->entry.payload.size();
            cache.count(k_backend, counter::hits_prefix + found->tier);
            cache.count(k_backend, counter::saved_ns, found->entry.compile_ns);
            return detail::HandleCache::Loaded{hold(*program), info};
          }
          cache.count(k_backend, counter::rejected);
          cache.evict(*key);
          info.note = "stored binary rejected (" + program.error().message + "); rebuilt";
          log::warn("OpenCL runtime rejected the stored binary for key " + key->digest.hex() +
                    " (" + program.error().message + "); evicted it and rebuilding from source");
        }
        Stopwatch compile;
        auto program = from_source(context, device, source, options);
        if (!program) {
          cache.count(k_backend, counter::compile_errors);
          return std::move(program).error();
        }
        const std::uint64_t compile_ns = compile.ns();
        cache.count(k_backend, counter::misses);
        // Holds the lease until the binary is stored, and counts the compile with it.
        auto compiled = cache.core().compiled(*key, std::move(claim.lease));
        info.outcome = Outcome::miss;
        info.tier = "compile";
        info.compile_ms = compile_ns / 1e6;
        auto handle = hold(*program);
        // The binary goes to the persistent tiers in the background: reading it makes PoCL
        // compile every kernel of the program, which the caller should not wait for. On PoCL
        // (with its own cache on) it is read from a private program built again from the source
        // (a cheap hit in PoCL's cache): PoCL holds a program's lock while it compiles the
        // kernels for its binary, and reading the caller's program would block the caller's
        // clCreateKernel behind it. The same private build runs again at flush, when PoCL's
        // program directory also holds the kernels it specialised for the launches made, so a
        // later process launches without compiling. (PoCL serialises a program's binary once,
        // so re-reading the caller's program would not see them.) Other runtimes: the caller's
        // program is read, once.
        if (cache.persistent(k_backend) && !cache.config().read_only) {
          std::function<Expected<Entry>()> produce, refresh;
          if (pocl_cache_on(*id, cache.config())) {
            produce = [handle, context, device, source = std::string(source), options,
                       compile_ns]() -> Expected<Entry> {
              auto again = from_source(context, device, source, options);
              if (!again)
                return std::move(again).error();
              auto binary = read_binary(*again);
              clReleaseProgram(*again);
              if (!binary)
                return std::move(binary).error();
              return Entry{k_backend, std::move(*binary), {}, compile_ns};
            };
            refresh = produce;
          } else {
            produce = [handle, compile_ns]() -> Expected<Entry> {
              auto binary = read_binary(static_cast<cl_program>(handle.get()));
              if (!binary)
                return std::move(binary).error();
              return Entry{k_backend, std::move(*binary), {}, compile_ns};
            };
          }
          cache.core().store_later(*key, produce, refresh, compiled);
        }
        return detail::HandleCache::Loaded{handle, info};
      },
      ran);
  if (!loaded)
    return std::move(loaded).error();
  handles.alias(request, *loaded, keyed.guards);
  if (!ran)
    return memory_hit(*loaded);
  BuildInfo info = loaded->info;
  info.total_ms = total.ms();
  return hand_out(*loaded, std::move(info));
}

} // namespace jitcache::opencl
