#pragma once

#include <jitcache/config.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace jitcache::detail {

/// A cache that a GPU runtime or a Python binding keeps of its own (not jitcache's).
struct RuntimeCache {
  std::string name; ///< short name: "pocl", "cuda-driver", "comgr", "pyopencl", "pytools", "cupy"
  std::string backend;  ///< the backend whose stack it belongs to: "opencl", "cuda" or "hip"
  std::string variable; ///< the variable that moves it ("POCL_CACHE_DIR"; "XDG_CACHE_HOME" when
                        ///< it has none of its own)
  std::filesystem::path dir; ///< where it is under the config; empty when HOME is unset too
};

/// Every runtime and binding cache jitcache knows, with its location resolved from
/// `config.variables` the way that runtime resolves it (its own variable, else its default under
/// XDG_CACHE_HOME or HOME). The one table behind `jitcache info` and
/// `jitcache clear --runtime-caches`. An empty variable counts as unset. Never fails.
std::vector<RuntimeCache> runtime_caches(const Config& config);

} // namespace jitcache::detail
