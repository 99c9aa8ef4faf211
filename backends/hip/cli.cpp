// The HIP backend as the command-line tool sees it: one build (on a device, or for --arch
// without one), its key, and facts for `jitcache info`.
#include "backends/hip/hip_api.hpp"
#include "backends/hip/hip_error.hpp"
#include "backends/hip/hip_runtime.hpp"
#include "backends/hip/hip_targets.hpp"
#include "core/engine/backend.hpp"
#include "core/engine/pipeline.hpp"
#include "core/key/includes.hpp"
#include "core/record/request_replay.hpp"

#include <jitcache/hip.hpp>

#include <filesystem>

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace jitcache {

using detail::Backend;
using detail::BuildRequest;
using detail::split_options;

namespace {

// hipRTC takes one option per element; the CLI's --options string is split like a shell would.
// The program is named by the file's name alone: hipRTC never looks in its directory, so the
// same file given by another path shares its entries.
hip::Program program_of(const BuildRequest& request) {
  hip::Program program;
  program.source = request.source;
  program.name = std::filesystem::path(request.file).filename().string();
  program.options = split_options(request.options);
  return program;
}

// Makes --device current for this process (the CLI's own thread): load_module loads there.
Expected<void> use_device(int device) {
  if (auto target = hip::device_target(device); !target) // checks the range, bounded init
    return target.error();
  const hip::RuntimeApi& api = **hip::runtime();
  if (hipError_t rc = api.hipSetDevice(device); rc != hipSuccess)
    return hip::hip_error(api, "hipSetDevice", rc);
  return {};
}

// Whether the library file at `path` contains `text`: how `jitcache info` tells whether the
// installed comgr reads its cache variables at all (comgr 2.4 has no cache; later ones do).
bool file_contains(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct stat st {};
  bool found = false;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    const auto size = static_cast<std::size_t>(st.st_size);
    void* data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data != MAP_FAILED) {
      found = memmem(data, size, text.data(), text.size()) != nullptr;
      munmap(data, size);
    }
  }
  close(fd);
  return found;
}

class HipBackend final : public Backend {
public:
  std::string name() const override { return "hip"; }

  Expected<BuildInfo> build(Cache& cache, const BuildRequest& request) override {
    const hip::Program program = program_of(request);
    if (!request.arch.empty()) {
      auto code = hip::compile(cache, request.arch, program);
      if (!code)
        return code.error();
      return code->info;
    }
    if (auto ok = use_device(request.device); !ok)
      return ok.error();
    auto module = hip::load_module(cache, program);
    if (!module)
      return module.error();
    return module->info;
  }

  bool claims_target(const std::string& target) const override {
    return target.rfind("gfx", 0) == 0;
  }

  Expected<void> check_target(const std::string& target) override {
    auto table = hip::target_table();
    if (!table)
      return table.error();
    if (auto known = hip::canonical_target(target, **table); !known)
      return known.error();
    return {};
  }

  Expected<BuildInfo> replay(Cache& cache, const detail::RequestRecord& record,
                             const std::string& target, int,
                             const std::filesystem::path&) override {
    auto program = detail::replayed_program<hip::Program>(
        record,
        [&](const auto& program) { return hip::make_key(cache.config(), program, record.device); },
        [&](const auto& program) {
          hip::Runtime runtime(cache.config(), program, record.device);
          return detail::remembered_current_key(cache, runtime);
        });
    if (!program)
      return program.error();
    auto code = hip::compile(cache, target.empty() ? record.device : target, *program);
    if (!code)
      return code.error();
    return code->info;
  }

  Expected<Key> key(const Config& config, const BuildRequest& request) override {
    std::string target = request.arch;
    if (target.empty()) {
      auto own = hip::device_target(request.device);
      if (!own)
        return own.error();
      target = *own;
    }
    return hip::make_key(config, program_of(request), target);
  }

  std::vector<std::pair<std::string, std::string>> facts(const Config& config) override {
    std::vector<std::pair<std::string, std::string>> out;
    auto runtime = hip::runtime();
    if (!runtime) {
      out.emplace_back("runtime", runtime.error().message);
    } else {
      out.emplace_back("runtime", (*runtime)->runtime_file.path);
      if ((*runtime)->hiprtc_file.path != (*runtime)->runtime_file.path)
        out.emplace_back("hiprtc", (*runtime)->hiprtc_file.path);
      auto count = hip::device_count();
      if (!count)
        out.emplace_back("devices", count.error().message);
      for (int i = 0; count && i < *count; ++i) {
        auto target = hip::device_target(i);
        out.emplace_back("device " + std::to_string(i), target ? *target : target.error().message);
      }
    }
    auto comgr = hip::comgr();
    if (!comgr) {
      out.emplace_back("comgr", comgr.error().message);
    } else {
      out.emplace_back("comgr", (*comgr)->version + " (" + (*comgr)->file.path + ")");
      auto targets = hip::supported_targets();
      std::string list;
      for (const std::string& t : targets ? *targets : std::vector<std::string>())
        list += (list.empty() ? "" : " ") + t;
      out.emplace_back("targets", targets ? list : targets.error().message);
    }
    // comgr's own compile cache (newer comgr only): AMD_COMGR_CACHE=0 turns it off; its
    // directory is listed with the other runtime caches (core/engine/runtime_caches).
    const auto var = [&](const char* name) {
      auto it = config.variables.find(name);
      return it == config.variables.end() ? std::string() : it->second;
    };
    const bool reads = comgr && file_contains((*comgr)->file.path, "AMD_COMGR_CACHE");
    const std::string setting =
        var("AMD_COMGR_CACHE").empty() ? "unset" : "AMD_COMGR_CACHE=" + var("AMD_COMGR_CACHE");
    out.emplace_back("AMD_COMGR_CACHE",
                     setting + (reads ? " (comgr's cache is on unless it is 0)"
                                      : "; the installed comgr has no cache and ignores it"));
    return out;
  }
};

} // namespace

std::unique_ptr<Backend> detail::make_hip_backend() {
  return std::make_unique<HipBackend>();
}

} // namespace jitcache
