#pragma once

#include <pybind11/pybind11.h>

namespace jitcache::python {

/// Each adds its part of the extension module `m` (jitcache._jitcache). Called once, from
/// PYBIND11_MODULE, with the GIL held.
void bind_build_info(pybind11::module_& m);
void bind_cache(pybind11::module_& m);
void bind_tuning(pybind11::module_& m);
#ifdef JITCACHE_HAVE_OPENCL
void bind_opencl(pybind11::module_& m);
/// The cohort's entry for jitcache/mpi.py (OpenCL sets).
void bind_cohort(pybind11::module_& m);
#endif
#ifdef JITCACHE_HAVE_CUDA
void bind_cuda(pybind11::module_& m);
#endif

} // namespace jitcache::python
