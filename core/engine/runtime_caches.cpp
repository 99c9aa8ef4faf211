#include "core/engine/runtime_caches.hpp"

namespace jitcache::detail {

namespace {

// Where each runtime puts its cache when its own variable is unset, as that runtime (the
// version Debian 12 ships) decides it:
// - PoCL 3.1: $XDG_CACHE_HOME/pocl/kcache, else ~/.cache/pocl/kcache;
// - the CUDA driver: ~/.nv/ComputeCache;
// - comgr: $XDG_CACHE_HOME/comgr, else ~/.cache/comgr;
// - PyOpenCL 2022.3 and pytools 2022.1: platformdirs' user_cache_dir(name), i.e.
//   $XDG_CACHE_HOME/<name>, else ~/.cache/<name>; they have no variable of their own;
// - CuPy: ~/.cupy/kernel_cache.
struct Row {
  const char* name;
  const char* backend;
  const char* variable;   // its own location variable; null: only XDG_CACHE_HOME moves it
  const char* under_xdg;  // path under $XDG_CACHE_HOME; null: XDG is not consulted
  const char* under_home; // path under $HOME when XDG_CACHE_HOME is unset (or not consulted)
};

constexpr Row k_caches[] = {
    {"pocl", "opencl", "POCL_CACHE_DIR", "pocl/kcache", ".cache/pocl/kcache"},
    {"pyopencl", "opencl", nullptr, "pyopencl", ".cache/pyopencl"},
    {"pytools", "opencl", nullptr, "pytools", ".cache/pytools"},
    {"cuda-driver", "cuda", "CUDA_CACHE_PATH", nullptr, ".nv/ComputeCache"},
    {"cupy", "cuda", "CUPY_CACHE_DIR", nullptr, ".cupy/kernel_cache"},
    {"comgr", "hip", "AMD_COMGR_CACHE_DIR", "comgr", ".cache/comgr"},
};

} // namespace

std::vector<RuntimeCache> runtime_caches(const Config& config) {
  const auto var = [&](const char* name) {
    auto it = config.variables.find(name);
    return it == config.variables.end() ? std::string() : it->second;
  };
  std::vector<RuntimeCache> out;
  for (const Row& row : k_caches) {
    RuntimeCache cache{row.name, row.backend, row.variable ? row.variable : "XDG_CACHE_HOME", {}};
    if (row.variable && !var(row.variable).empty())
      cache.dir = var(row.variable);
    else if (row.under_xdg && !var("XDG_CACHE_HOME").empty())
      cache.dir = std::filesystem::path(var("XDG_CACHE_HOME")) / row.under_xdg;
    else if (!var("HOME").empty())
      cache.dir = std::filesystem::path(var("HOME")) / row.under_home;
    out.push_back(std::move(cache));
  }
  return out;
}

} // namespace jitcache::detail
