#pragma once

#include <jitcache/cache.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace jitcache {

/// One build request as the command-line tool gives it (DESIGN.md CLI contract).
struct BuildRequest {
  std::string file;    ///< path of the source, as given (used for name and include lookup)
  std::string source;  ///< its content
  std::string options; ///< build options exactly as given
  int device = 0;      ///< device index within the backend
  std::string arch;    ///< empty = the device's own; else compile only for this target
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

} // namespace jitcache
