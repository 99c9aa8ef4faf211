// jitcache._jitcache: the compiled half of the Python package (python/jitcache/ is the other).
#include "python/src/bindings.hpp"

#include <jitcache/version.hpp>

PYBIND11_MODULE(_jitcache, m) {
  m.doc() = "jitcache's C++ API for Python; use the jitcache package, not this module";
  m.attr("version") = jitcache::k_version;
  m.attr("has_opencl") =
#ifdef JITCACHE_HAVE_OPENCL
      true;
  jitcache::python::bind_opencl(m);
#else
      false;
#endif
  m.attr("has_cuda") =
#ifdef JITCACHE_HAVE_CUDA
      true;
  jitcache::python::bind_cuda(m);
#else
      false;
#endif
  jitcache::python::bind_build_info(m);
  jitcache::python::bind_cache(m);
}
