// jitcache._jitcache: the compiled half of the Python package (python/jitcache/ is the other).
#include "python/src/bindings.hpp"

#include <jitcache/version.hpp>

PYBIND11_MODULE(_jitcache, m) {
  using namespace jitcache::python;
  m.doc() = "jitcache's C++ API for Python; use the jitcache package, not this module";
  m.attr("version") = jitcache::k_version;
  // BuildInfo first: the results of the backends' calls carry one.
  bind_build_info(m);
  bind_cache(m);
  bind_tuning(m);
#ifdef JITCACHE_HAVE_OPENCL
  m.attr("has_opencl") = true;
  bind_opencl(m);
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
