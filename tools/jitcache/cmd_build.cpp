#include "tools/jitcache/backend_table.hpp"
#include "tools/jitcache/commands.hpp"

#include <jitcache/cache.hpp>

#include <cstdio>
#include <filesystem>

namespace jitcache::cli {

using detail::BuildRequest;

int run_build(const Config& environment, const BuildOptions& options, const Output& out) {
  auto backend = find_backend(options.backend);
  if (!backend)
    return fail(backend.error());
  Config config = environment;
  if (options.wait)
    config.opencl_store = StoreMode::wait;
  if (!options.record.empty())
    config.record = std::filesystem::absolute(options.record);
  // Stores that wait are waited for per file, so that each line reports its size; handed-over
  // ones go to one detached process at exit, and their size is not known yet.
  const bool wait = config.opencl_store == StoreMode::wait;
  Cache cache(config);
  for (const std::string& file : options.files) {
    auto source = read_source(file, options.max_source_size);
    if (!source)
      return fail(source.error());
    BuildRequest request{file, *source, options.options, options.device, options.arch};
    auto info = (*backend)->build(cache, request);
    if (!info)
      return fail(info.error());
    if (wait)
      cache.flush();
    if (info->bytes == 0)
      if (auto key = (*backend)->key(config, request))
        if (auto found = cache.lookup(*key))
          info->bytes = found->entry.payload.size();
    nlohmann::json line = {
        {"file", file},
        {"backend", options.backend},
        {"device", info->device},
        {"key", info->key.hex()},
        {"outcome", to_string(info->outcome)},
        {"tier", info->tier},
        {"compile_ms", info->compile_ms},
        {"load_ms", info->load_ms},
        {"total_ms", info->total_ms},
        {"bytes", info->bytes},
    };
    if (info->bytes == 0)
      line["bytes"] = nullptr; // not stored yet
    if (!info->note.empty())
      line["note"] = info->note;
    char text[512];
    std::snprintf(text, sizeof text,
                  "%s: %s from %s in %.2f ms (compile %.2f ms, load %.2f ms), "
                  "%s bytes, key %.16s",
                  file.c_str(), to_string(info->outcome), info->tier.c_str(), info->total_ms,
                  info->compile_ms, info->load_ms,
                  info->bytes ? std::to_string(info->bytes).c_str() : "unknown",
                  info->key.hex().c_str());
    out.emit(line, text);
  }
  return 0;
}

} // namespace jitcache::cli
