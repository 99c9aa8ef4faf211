// jitcache.cuda: load_module (into the current context, as CuPy and cuda-python make it) and
// compile (offline, no GPU).
#include "python/src/bindings.hpp"
#include "python/src/errors.hpp"
#include "python/src/py_cache.hpp"

#include <jitcache/cuda.hpp>

#include <pybind11/stl.h>

#include <cstdint>

namespace py = pybind11;

namespace jitcache::python {

namespace {

cuda::Program program_of(std::string source, std::vector<std::string> options,
                         std::vector<std::string> name_expressions, std::string name,
                         const std::map<std::string, std::string>& headers) {
  cuda::Program program;
  program.source = std::move(source);
  program.name = std::move(name);
  program.options = std::move(options);
  program.name_expressions = std::move(name_expressions);
  for (const auto& [header_name, content] : headers)
    program.headers.push_back({header_name, content});
  return program;
}

// Calls `run` on the cache without the GIL; raises its error.
template <typename T, typename Run> T call(const PyCache& py_cache, Run run) {
  std::shared_ptr<Cache> cache = py_cache.get();
  Expected<T> result = [&] {
    py::gil_scoped_release release;
    return run(*cache);
  }();
  if (!result)
    raise_error(result.error());
  return std::move(result).value();
}

} // namespace

void bind_cuda(py::module_& m) {
  py::class_<cuda::Module>(m, "CudaModule",
                           "A module loaded into the CUDA context that was current. handle is "
                           "the CUmodule as an int (for cupy.cuda.driver.moduleGetFunction or "
                           "cuda-python's CUmodule(handle)); it stays loaded while this object "
                           "or its Cache lives: never unload it.")
      .def_property_readonly(
          "handle",
          [](const cuda::Module& m) { return reinterpret_cast<std::uintptr_t>(m.module); })
      .def_readonly("lowered_names", &cuda::Module::lowered_names,
                    "{name expression: lowered (mangled) name}")
      .def_readonly("info", &cuda::Module::info)
      .def(
          "function",
          [](const cuda::Module& m, const std::string& name) {
            Expected<CUfunction> f = m.function(name);
            if (!f)
              raise_error(f.error());
            return reinterpret_cast<std::uintptr_t>(*f);
          },
          py::arg("name"),
          "The CUfunction (as an int) of a name expression or a symbol of the module.");

  py::class_<cuda::Binary>(m, "CudaBinary", "A cubin compiled for an architecture (offline).")
      .def_property_readonly(
          "cubin", [](const cuda::Binary& b) { return py::bytes(b.cubin); }, "the ELF cubin")
      .def_readonly("target", &cuda::Binary::target)
      .def_readonly("lowered_names", &cuda::Binary::lowered_names)
      .def_readonly("info", &cuda::Binary::info);

  m.def(
      "cuda_load_module",
      [](const PyCache& cache, std::string source, std::vector<std::string> options,
         std::vector<std::string> name_expressions, std::string name,
         const std::map<std::string, std::string>& headers) {
        const cuda::Program program =
            program_of(std::move(source), std::move(options), std::move(name_expressions),
                       std::move(name), headers);
        return call<cuda::Module>(cache, [&](Cache& c) { return cuda::load_module(c, program); });
      },
      py::arg("cache"), py::arg("source"), py::arg("options"), py::arg("name_expressions"),
      py::arg("name"), py::arg("headers"));

  m.def(
      "cuda_compile",
      [](const PyCache& cache, std::string source, const std::string& arch,
         std::vector<std::string> options, std::vector<std::string> name_expressions,
         std::string name, const std::map<std::string, std::string>& headers) {
        const cuda::Program program =
            program_of(std::move(source), std::move(options), std::move(name_expressions),
                       std::move(name), headers);
        return call<cuda::Binary>(cache, [&](Cache& c) { return cuda::compile(c, arch, program); });
      },
      py::arg("cache"), py::arg("source"), py::arg("arch"), py::arg("options"),
      py::arg("name_expressions"), py::arg("name"), py::arg("headers"));
}

} // namespace jitcache::python
