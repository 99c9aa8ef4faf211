#pragma once

#include "core/record/request_record.hpp"

#include <jitcache/cache.hpp>

#include <filesystem>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitcache::detail {

/// One build request as the command-line tool gives it (DESIGN.md CLI contract).
struct BuildRequest {
  std::string file;    ///< path of the source, as given (used for name and include lookup)
  std::string source;  ///< its content
  std::string options; ///< build options exactly as given
  int device = 0;      ///< device index within the backend
  std::string arch;    ///< empty = the device's own; else compile only for this target
  /// Backend::store: how long the requesting process's compile took (RequestRecord::compile_ns);
  /// 0: not known.
  std::uint64_t compile_ns = 0;
};

/// What a person recognises a stored entry by, beyond its key fields (`jitcache list`): empty
/// parts are not known.
struct EntryDescription {
  std::string source;               ///< the source's name
  std::vector<std::string> kernels; ///< its kernels
};

/// What the CLI needs of a backend. Each backend folder provides one (backends/<name>/cli.cpp)
/// and tools/jitcache lists them in one static table guarded by JITCACHE_HAVE_<NAME>.
class Backend {
public:
  virtual ~Backend() = default;
  /// "opencl", "cuda", "hip".
  virtual std::string name() const = 0;
  /// Builds `request` through `cache`. With request.arch set, compiles and stores for that
  /// target without needing a device (where the backend supports it). Errors as the backend's
  /// own API gives them; compile_failed carries the log.
  virtual Expected<BuildInfo> build(Cache& cache, const BuildRequest& request) = 0;
  /// Builds `request` again and stores its binary under `key`, the key the caller found
  /// `request` has, without counting a miss: for `jitcache store`, which stores what a process
  /// handed over (Config::opencl_store). Returns the bytes stored. Errors as build();
  /// unsupported for a backend that never hands requests over.
  virtual Expected<std::uint64_t> store(Cache& cache, const BuildRequest& request, const Key& key) {
    static_cast<void>(cache);
    static_cast<void>(request);
    static_cast<void>(key);
    return Error(ErrorCode::unsupported, "the " + name() + " backend hands no stores over");
  }
  /// Whether `target` is of this backend's kind (CUDA "sm_XY", HIP "gfx..."), supported or not.
  /// Loads no runtime: `jitcache warm` routes each `--arch` target to its backend with it.
  virtual bool claims_target(const std::string& target) const = 0;
  /// Checks a target given to `jitcache warm --arch`. Errors: invalid_argument or unsupported,
  /// the message listing the targets the installed compiler supports; unsupported for a backend
  /// that builds only for present devices.
  virtual Expected<void> check_target(const std::string& target) = 0;
  /// What an entry of this backend says of itself in its `metadata` (Entry::metadata), for
  /// `jitcache list`; nothing by default (CUDA and HIP name their source and kernels in the key
  /// fields). Never fails: metadata it cannot read describes nothing.
  virtual EntryDescription describe(std::string_view metadata) const {
    static_cast<void>(metadata);
    return {};
  }
  /// Makes `record`, a request of this backend recorded by JITCACHE_RECORD, again through
  /// `cache` (for `jitcache warm`): for `target` (CUDA, HIP: a target that need not be present;
  /// empty: the recorded one), or on device `device` (OpenCL). First proves that the replay has
  /// the recorded key for the recorded target, so that what it stores answers the recording
  /// application's own request; nothing is compiled or stored otherwise. CUDA and HIP give the
  /// recorded headers in memory; OpenCL builds as recorded when that has the key, else with the
  /// recorded headers written into a new folder under `scratch` (which the caller removes once
  /// the cache has been flushed) and the include paths pointed there. Errors: invalid_argument
  /// saying how the key differs (see detail::check_replayed_key), and as build(). Thread-safe:
  /// any number of threads may replay through one backend and one cache at once.
  virtual Expected<BuildInfo> replay(Cache& cache, const detail::RequestRecord& record,
                                     const std::string& target, int device,
                                     const std::filesystem::path& scratch) = 0;
  /// The key `request` would use under `config` (for `jitcache explain`).
  virtual Expected<Key> key(const Config& config, const BuildRequest& request) = 0;
  /// Facts for `jitcache info`: the runtime's version, its own cache locations and sizes,
  /// devices. Never fails: a missing runtime is reported as a fact.
  virtual std::vector<std::pair<std::string, std::string>> facts(const Config& config) = 0;
};

/// Factories, defined in each backend's cli.cpp.
std::unique_ptr<Backend> make_opencl_backend();
std::unique_ptr<Backend> make_cuda_backend();
std::unique_ptr<Backend> make_hip_backend();
/// The front-ends' requests (interposers/rtc/rtc_backend.hpp), defined with each front-end.
std::unique_ptr<Backend> make_nvrtc_backend();
std::unique_ptr<Backend> make_hiprtc_backend();

} // namespace jitcache::detail
