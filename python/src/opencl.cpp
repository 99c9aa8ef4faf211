// The OpenCL call for jitcache/opencl.py, which turns PyOpenCL objects into handles and back.
#include "python/src/bindings.hpp"
#include "python/src/errors.hpp"
#include "python/src/py_cache.hpp"

#include <jitcache/opencl.hpp>

#include <pybind11/stl.h>

#include <cstdint>
#include <ctime>
#include <string_view>

namespace py = pybind11;

namespace jitcache::python {

void bind_opencl(py::module_& m) {
  // Handles travel as integers (PyOpenCL's int_ptr); jitcache/opencl.py checks the objects'
  // types, so an integer here always comes from a live PyOpenCL object. The source is read in
  // place from the str's UTF-8 form (no copy).
  m.def(
      "opencl_build",
      [](const PyCache& py_cache, std::uintptr_t context, std::uintptr_t device,
         std::string_view source, std::string_view options) {
        std::shared_ptr<Cache> cache = py_cache.get();
        Expected<opencl::Program> built = [&] {
          py::gil_scoped_release release;
          return opencl::build_program(*cache, reinterpret_cast<cl_context>(context),
                                       reinterpret_cast<cl_device_id>(device), source, options);
        }();
        if (!built)
          raise_error(built.error());
        // The caller owns this reference; PyOpenCL takes it over (from_int_ptr, retain=False).
        return py::make_tuple(reinterpret_cast<std::uintptr_t>(built->program),
                              std::move(built->info));
      },
      py::arg("cache"), py::arg("context"), py::arg("device"), py::arg("source"),
      py::arg("options"),
      "(cl_program as int, BuildInfo); the caller owns one reference to the program.");

  m.def(
      "opencl_tuning_device",
      [](std::uintptr_t device) {
        auto found = opencl::tuning_device(reinterpret_cast<cl_device_id>(device));
        if (!found)
          raise_error(found.error());
        return py::make_tuple(found->backend, found->name, found->identity);
      },
      py::arg("device"), "(backend, name, identity): the device as the tuning database knows it.");

  // For bench/python/bench_pyopencl.py: the C++ call's own cost, in this process and between the
  // Python calls it is compared with, in this thread's CPU time (on a shared machine, wall time
  // and separate processes differ by more than the few microseconds measured).
  m.def(
      "opencl_build_ns_per_call",
      [](const PyCache& py_cache, std::uintptr_t context, std::uintptr_t device,
         std::string_view source, std::string_view options, int calls) {
        std::shared_ptr<Cache> cache = py_cache.get();
        py::gil_scoped_release release;
        const auto now = [] {
          timespec t{};
          clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
          return t.tv_sec * 1e9 + t.tv_nsec;
        };
        const double start = now();
        for (int i = 0; i < calls; ++i) {
          Expected<opencl::Program> built =
              opencl::build_program(*cache, reinterpret_cast<cl_context>(context),
                                    reinterpret_cast<cl_device_id>(device), source, options);
          if (built)
            clReleaseProgram(built->program);
        }
        return (now() - start) / calls;
      },
      py::arg("cache"), py::arg("context"), py::arg("device"), py::arg("source"),
      py::arg("options"), py::arg("calls"));
}

} // namespace jitcache::python
