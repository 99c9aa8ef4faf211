#include "python/src/errors.hpp"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace jitcache::python {

void raise_error(const Error& error) {
  // The exception classes are plain Python (jitcache/_errors.py), so that they pickle, subclass
  // and print like any other; looked up only when an error is raised.
  py::object classes = py::module_::import("jitcache._errors");
  py::object type =
      classes.attr(error.code == ErrorCode::invalid_argument ? "ArgumentError" : "Error");
  py::object instance = type(error.message, to_string(error.code), error.log);
  PyErr_SetObject(type.ptr(), instance.ptr());
  throw py::error_already_set();
}

} // namespace jitcache::python
