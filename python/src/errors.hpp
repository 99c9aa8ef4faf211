#pragma once

#include <jitcache/error.hpp>

namespace jitcache::python {

/// Raises `error` in Python as jitcache.Error (jitcache.ArgumentError, also a ValueError, for
/// invalid_argument) with .code, .message and .log, by throwing pybind11::error_already_set.
/// Needs the GIL.
[[noreturn]] void raise_error(const Error& error);

} // namespace jitcache::python
