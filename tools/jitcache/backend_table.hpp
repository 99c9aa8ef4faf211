#pragma once

#include "core/engine/backend.hpp"

#include <jitcache/expected.hpp>

#include <memory>
#include <string>

namespace jitcache::cli {

/// The backend named `name`. Errors: invalid_argument for an unknown name, unsupported for a
/// known backend that this build does not include.
Expected<std::unique_ptr<detail::Backend>> find_backend(const std::string& name);

/// Whether `name` is built into this binary.
bool backend_built(const std::string& name);

/// Whether `name` is a backend jitcache knows (opencl, cuda, hip, nvrtc, hiprtc), built into this
/// binary or not. Errors: invalid_argument naming it and the known ones.
Expected<void> known_backend(const std::string& name);

} // namespace jitcache::cli
