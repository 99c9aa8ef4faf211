#pragma once

#include "core/tiers/packages/package_target.hpp"

#include <jitcache/config.hpp>
#include <jitcache/expected.hpp>

#include <string>

namespace jitcache::cli {

/// The target that device `index` of `backend` needs packages for: the device fields of a key
/// made for it (no compile). Errors: the backend's, when it is not built or has no such device
/// (no GPU, no runtime).
Expected<detail::PackageTarget> device_target(const Config& config, const std::string& backend,
                                              int index);

} // namespace jitcache::cli
