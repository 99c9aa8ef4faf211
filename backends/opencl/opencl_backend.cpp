#include <jitcache/opencl.hpp>

#include "backends/opencl/opencl_compile.hpp"
#include "backends/opencl/opencl_error.hpp"
#include "backends/opencl/opencl_key.hpp"
#include "core/cache_core.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/request_log.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace jitcache::opencl {

namespace {

constexpr const char* k_backend = "opencl";

bool pocl(const Identity& id) {
  return std::any_of(id.device.begin(), id.device.end(),
                     [](const auto& field) { return field.first == "pocl_build_hash"; });
}

// Whether `id` is a PoCL device whose own kernel cache is on (POCL_KERNEL_CACHE unset or true).
bool pocl_cache_on(const Identity& id, const Config& config) {
  auto it = config.variables.find("POCL_KERNEL_CACHE");
  return pocl(id) && (it == config.variables.end() || it->second != "0");
}

// The request as a record carries it (the key's part and the compile environment are filled
// by record_request). No variable of the configuration: a request file names what to build,
// and the store process runs with the requesting process's settings from its environment.
detail::RequestRecord describe(const Identity& id, std::string_view source,
                               const std::string& options) {
  std::error_code ec;
  detail::RequestRecord record;
  record.backend = k_backend;
  record.device = id.device_name;
  record.options = {options};
  record.directory = std::filesystem::current_path(ec).string();
  record.source = std::string(source);
  return record;
}

// The request as a detached `jitcache store` makes it again (StoreMode::detach). nullopt when
// the current directory is gone: relative paths could not be resolved again.
std::optional<detail::RequestRecord> handover(const Identity& id, const Key& key,
                                              std::string_view source, const std::string& options) {
  detail::RequestRecord record = describe(id, source, options);
  if (record.directory.empty())
    return std::nullopt;
  record.key = key.digest.hex();
  return record;
}

detail::HandleCache::Handle hold(cl_program program) {
  return detail::HandleCache::Handle(program,
                                     [](void* p) { clReleaseProgram(static_cast<cl_program>(p)); });
}

Program hand_out(const detail::HandleCache::Loaded& loaded, BuildInfo info) {
  auto program = static_cast<cl_program>(loaded.handle.get());
  clRetainProgram(program);
  return Program{program, std::move(info)};
}

// How a program compiled from source gets its entry: read and stored in the background, since
// reading it makes PoCL compile every kernel of the program, which the caller should not wait
// for. On PoCL (with its own cache on) it is read from a private program built again from the
// source (a cheap hit in PoCL's cache): PoCL holds a program's lock while it compiles the
// kernels for its binary, and reading the caller's program would block the caller's
// clCreateKernel behind it. The same private build runs again at flush, when PoCL's program
// directory also holds the kernels it specialised for the launches made, so a later process
// launches without compiling. (PoCL serialises a program's binary once, so re-reading the
// caller's program would not see them.) Other runtimes: the caller's program is read, once.
void store_later(detail::Compiled& compiled, const detail::HandleCache::Handle& handle,
                 cl_context context, cl_device_id device, std::string_view source,
                 const std::string& options, bool pocl_cache) {
  if (pocl_cache) {
    compiled.later = [handle, context, device, source = std::string(source),
                      options]() -> Expected<Entry> {
      auto again = from_source(context, device, source, options);
      if (!again)
        return std::move(again).error();
      auto binary = read_binary(*again);
      clReleaseProgram(*again);
      if (!binary)
        return std::move(binary).error();
      return Entry{k_backend, std::move(*binary)};
    };
    compiled.refresh = compiled.later;
    return;
  }
  compiled.later = [handle]() -> Expected<Entry> {
    auto binary = read_binary(static_cast<cl_program>(handle.get()));
    if (!binary)
      return std::move(binary).error();
    return Entry{k_backend, std::move(*binary)};
  };
}

} // namespace

Expected<Key> make_key(const Config& config, cl_device_id device, std::string_view source,
                       std::string_view options) {
  auto id = identity(device);
  if (!id)
    return std::move(id).error();
  return key_for(*id, config, source, options);
}

Expected<tuning::Device> tuning_device(cl_device_id device) {
  auto id = identity(device);
  if (!id)
    return std::move(id).error();
  tuning::Device out{k_backend, id->device_name, id->device};
  out.identity.insert(out.identity.end(), id->toolchain.begin(), id->toolchain.end());
  return out;
}

Expected<Program> build_program(Cache& cache, cl_context context, cl_device_id device,
                                std::string_view source, std::string_view options_view) {
  Stopwatch total;
  if (!context || !device)
    return Error(ErrorCode::invalid_argument, "build_program: null context or device");
  if (source.empty())
    return Error(ErrorCode::invalid_argument, "build_program: empty source");
  detail::CacheCore& core = detail::core_of(cache);
  auto& handles = core.handles();
  const auto memory_hit = [&](const detail::HandleCache::Loaded& loaded) {
    BuildInfo info = core.memory_hit(k_backend, loaded.info);
    info.total_ms = total.ms();
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
  const detail::GuardedKey keyed = remembered_key(core, *id, source, options_view);
  const Key& key = keyed.key;
  const std::string options(options_view);

  bool ran = false;
  auto loaded = handles.get_or_load(
      {key.digest, context, device},
      [&]() -> Expected<detail::HandleCache::Loaded> {
        BuildInfo info;
        info.device = id->device_name;
        detail::HandleCache::Handle handle;
        const detail::EntryReceiver use = [&](const EntryView& entry) -> Expected<void> {
          const Stopwatch load;
          auto program = from_binary(context, device, entry.payload, options);
          if (!program)
            return std::move(program).error();
          info.load_ms = load.ms();
          handle = hold(*program);
          return {};
        };
        const detail::Compiler compile = [&]() -> Expected<detail::Compiled> {
          auto program = from_source(context, device, source, options);
          if (!program)
            return std::move(program).error();
          handle = hold(*program);
          detail::Compiled compiled;
          const Config& config = cache.config();
          if (cache.persistent(k_backend) && !config.read_only) {
            store_later(compiled, handle, context, device, source, options,
                        pocl_cache_on(*id, config));
            // Reading a PoCL binary is the expensive part of a first run: it can happen in
            // another process, after this one has exited.
            if (pocl(*id) && config.opencl_store == StoreMode::detach)
              compiled.handover = handover(*id, key, source, options);
          }
          return compiled;
        };
        if (auto got = core.obtain(key, compile, use, info, detail::CacheCore::Memory::skip); !got)
          return std::move(got).error();
        return detail::HandleCache::Loaded{handle, info};
      },
      ran);
  if (!loaded)
    return std::move(loaded).error();
  detail::record_request(cache.config(), key, [&] { return describe(*id, source, options); });
  handles.alias(request, *loaded, keyed.guards);
  if (!ran)
    return memory_hit(*loaded);
  BuildInfo info = loaded->info;
  info.total_ms = total.ms();
  return hand_out(*loaded, std::move(info));
}

} // namespace jitcache::opencl
