#include "tools/jitcache/backend_table.hpp"
#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/progress.hpp"

#include <jitcache/cache.hpp>

#include <cstdio>
#include <filesystem>

namespace jitcache::cli {

using detail::BuildRequest;

namespace {

// Whether an error building one file leaves the others worth building: the file's own (it cannot
// be read, does not compile), not the device's or the runtime's, which every file would repeat.
bool files_own(const Error& error) {
  return error.code == ErrorCode::compile_failed || error.code == ErrorCode::io_error ||
         error.code == ErrorCode::invalid_argument || error.code == ErrorCode::corrupt;
}

} // namespace

int run_build(const Config& environment, const BuildOptions& options, const Output& out) {
  auto backend = find_backend(options.backend);
  if (!backend)
    return fail_option(backend.error());
  if (!parse_size(options.max_source_size))
    return usage_error("--max-source-size " + options.max_source_size +
                       ": not a size (e.g. 64M, 1G)");
  Config config = environment;
  if (options.wait)
    config.opencl_store = StoreMode::wait;
  if (!options.record.empty())
    config.record = std::filesystem::absolute(options.record);
  // Stores that wait are waited for per file, so that each line reports its size; handed-over
  // ones go to one detached process at exit, and their size is not known yet.
  const bool wait = config.opencl_store == StoreMode::wait;
  Cache cache(config);
  int status = 0;
  // On a terminal, a line on stderr names the file in the works and estimates the time left:
  // a file takes seconds, and a store that is waited for more (reading a PoCL binary compiles
  // every kernel of the program).
  Progress progress(options.files.size(), out, Progress::Lines::kept);
  for (const std::string& file : options.files) {
    progress.begin(file);
    // A file that fails has its line too (--json: outcome "error"); its error goes to stderr.
    const auto failed = [&](const Error& error) {
      progress.done(true, file, [&] {
        if (out.json())
          out.emit({{"file", file},
                    {"backend", options.backend},
                    {"outcome", "error"},
                    {"code", to_string(error.code)},
                    {"error", first_line(error.message)}},
                   "");
        status = fail(error);
      });
      return !files_own(error);
    };
    auto source = read_source(file, options.max_source_size);
    if (!source && failed(source.error()))
      break;
    if (!source)
      continue;
    BuildRequest request{file, *source, options.options, options.device, options.arch};
    auto info = (*backend)->build(cache, request);
    if (!info && failed(info.error()))
      break;
    if (!info)
      continue;
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
    progress.done(false, file, [&] { out.emit(line, text); });
  }
  progress.finish();
  return status;
}

} // namespace jitcache::cli
