// jitcache._jitcache: the compiled half of the Python package (python/jitcache/ is the other).
#include "python/src/bindings.hpp"

#include <jitcache/config.hpp>
#include <jitcache/version.hpp>

#include "core/engine/store_handover.hpp"

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

PYBIND11_MODULE(_jitcache, m) {
  using namespace jitcache::python;
  m.doc() = "jitcache's C++ API for Python; use the jitcache package, not this module";
  m.attr("version") = jitcache::k_version;
  // Where this installation looks, for `python3 -m jitcache`-style checks and the packaging
  // test: the `jitcache` tool that stores in the background, and the package folders.
  m.def("_store_worker", []() -> std::optional<std::string> {
    if (auto worker = jitcache::detail::store_worker())
      return worker->string();
    return std::nullopt;
  });
  m.def("_system_path", []() {
    std::vector<std::string> folders;
    for (const auto& folder : jitcache::Config::from_environment().system_path)
      folders.push_back(folder.string());
    return folders;
  });
  // BuildInfo first: the results of the backends' calls carry one.
  bind_build_info(m);
  bind_cache(m);
  bind_tuning(m);
#ifdef JITCACHE_HAVE_OPENCL
  m.attr("has_opencl") = true;
  bind_opencl(m);
  bind_cohort(m);
#else
  m.attr("has_opencl") = false;
#endif
#ifdef JITCACHE_HAVE_CUDA
  m.attr("has_cuda") = true;
  bind_cuda(m);
#else
  m.attr("has_cuda") = false;
#endif
}
