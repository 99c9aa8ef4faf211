// jitcache.BuildInfo: how a request was served (read-only; attached to every result).
#include "python/src/bindings.hpp"

#include <jitcache/cache.hpp>

#include <sstream>

namespace py = pybind11;

namespace jitcache::python {

void bind_build_info(py::module_& m) {
  py::class_<BuildInfo>(m, "BuildInfo",
                        "How a build request was served: outcome ('hit' or 'miss'), tier "
                        "('memory', 'user', ... or 'compile'), compile_ms, load_ms, total_ms, "
                        "bytes (of the binary), key (hex SHA-256), device, note.")
      .def_property_readonly("outcome", [](const BuildInfo& i) { return to_string(i.outcome); })
      .def_readonly("tier", &BuildInfo::tier)
      .def_readonly("compile_ms", &BuildInfo::compile_ms)
      .def_readonly("load_ms", &BuildInfo::load_ms)
      .def_readonly("total_ms", &BuildInfo::total_ms)
      .def_readonly("bytes", &BuildInfo::bytes)
      .def_property_readonly("key", [](const BuildInfo& i) { return i.key.hex(); })
      .def_readonly("device", &BuildInfo::device)
      .def_readonly("note", &BuildInfo::note)
      .def("__repr__", [](const BuildInfo& i) {
        std::ostringstream text;
        text << "BuildInfo(outcome='" << to_string(i.outcome) << "', tier='" << i.tier
             << "', compile_ms=" << i.compile_ms << ", load_ms=" << i.load_ms
             << ", total_ms=" << i.total_ms << ", bytes=" << i.bytes << ", key='"
             << i.key.hex().substr(0, 16) << "...')";
        return text.str();
      });
}

} // namespace jitcache::python
