#pragma once

#include "core/key/dependencies.hpp"

#include <jitcache/config.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/key.hpp>
#include <jitcache/opencl.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitcache::opencl {

/// Device and toolchain identity of `device`, as key fields.
struct Identity {
  std::vector<std::pair<std::string, std::string>> device;    ///< platform/device names, versions
  std::vector<std::pair<std::string, std::string>> toolchain; ///< runtime + jitcache versions
  std::string device_name;
};

/// Queries (once per device per process; later calls return the remembered answer) the fields
/// DESIGN.md lists: platform name and version, device name, vendor, device and driver version,
/// PoCL's device build hash (the "HSTR:" part of CL_DEVICE_VERSION), jitcache's version.
/// Errors: runtime_error naming the failing clGetDeviceInfo/clGetPlatformInfo.
Expected<Identity> identity(cl_device_id device);

/// The key for a request on a device of identity `id`: what make_key() computes once the
/// identity is known. Separate so that an identity change (a driver or PoCL upgrade) can be
/// tested without a second runtime.
Key key_for(const Identity& id, const Config& config, std::string_view source,
            std::string_view options);

/// key_for() with the files the key was built from.
std::pair<Key, detail::Dependencies> make_key(const Identity& id, const Config& config,
                                              std::string_view source, std::string_view options);

/// The stored form of an identity, and back; nullopt on bytes that are not one.
std::string encode_identity(const Identity& id);
std::optional<Identity> decode_identity(std::string_view bytes);

} // namespace jitcache::opencl
