#pragma once

#include <jitcache/key.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace jitcache::detail {

/// What a package serves: one backend's binaries for one target. The identity is the key's
/// device section in its stored form (encode_key_fields), so a package serves a request exactly
/// when the request's device fields are the ones its entries were made for (CUDA: compute
/// capability and target arch; HIP: the gfx target id; OpenCL: the device identity, PoCL's build
/// hash included).
struct PackageTarget {
  std::string backend;
  std::string label;    ///< for people and file names: "sm_90", "gfx90a", the OpenCL device name
  std::string identity; ///< the device fields, encoded; compared byte for byte

  friend bool operator==(const PackageTarget& a, const PackageTarget& b) {
    return a.backend == b.backend && a.identity == b.identity;
  }
  friend bool operator!=(const PackageTarget& a, const PackageTarget& b) { return !(a == b); }
};

/// The target of a request of `backend` whose key has `fields` (only the device section is
/// read). The label is the field named "target_arch" or "target" when there is one, else
/// "device_name", else "unknown".
PackageTarget target_of(std::string_view backend, const std::vector<KeyField>& fields);

/// The target of a stored entry (Entry::key_fields); std::nullopt when the fields are malformed.
std::optional<PackageTarget> target_of_stored(std::string_view backend,
                                              std::string_view stored_fields);

/// The toolchain section of a stored entry's fields (Entry::key_fields), its records copied as
/// they are stored (decode_key_fields reads them): the compiler identity the entry was made
/// with. Empty when the entry has none; std::nullopt when the fields are malformed.
std::optional<std::string> toolchain_of_stored(std::string_view stored_fields);

/// The file name a package of `target` is suggested under: "<backend>-<label>.jcpkg", with any
/// character other than letters, digits, '.', '_' and '-' made '_' ("opencl-cpu-x86-64.jcpkg").
std::string package_file_name(const PackageTarget& target);

} // namespace jitcache::detail
