#pragma once

#include "backends/hip/hip_targets.hpp"
#include "core/key/dependencies.hpp"
#include "core/key/library_identity.hpp"
#include "core/key/manifest.hpp"

#include <jitcache/config.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/hip.hpp>
#include <jitcache/key.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitcache::detail {
class CacheCore;
} // namespace jitcache::detail

namespace jitcache::hip {

using detail::GuardedKey;

/// The toolchain fields of every HIP key: the hipRTC library file and size, comgr's version,
/// library file and size, jitcache's version. Read once per process with no HIP call, so that a
/// lookup never initialises the runtime. Errors: runtime_missing.
Expected<std::vector<std::pair<std::string, std::string>>> toolchain_fields();

/// hipRTC's and comgr's identity, as key fields, and the targets they compile.
struct Toolchain {
  std::vector<std::pair<std::string, std::string>> fields; ///< toolchain_fields()
  TargetTable targets;                                     ///< target_table()
  friend bool operator==(const Toolchain& a, const Toolchain& b) {
    return a.fields == b.fields && a.targets == b.targets;
  }
};

/// The identity of the libraries this process opens (both are opened), read once per process.
/// Errors: as toolchain_fields() and target_table().
Expected<const Toolchain*> toolchain();

/// The stored form of a toolchain, and back; nullopt on bytes that are not one. A package's
/// toolchain has fields and no targets.
std::string encode_toolchain(const Toolchain& toolchain);
std::optional<Toolchain> decode_toolchain(std::string_view bytes);

/// The libraries the toolchain's identity is remembered for (see detail::LibrarySearch):
/// libamdhip64, hipRTC and comgr by the sonames matching the headers built against.
const detail::LibrarySearch& library_search();

/// toolchain() in its stored form, with the library files it was read from (libamdhip64,
/// hipRTC when it is a file of its own, comgr). Errors: as toolchain().
Expected<detail::ProbedLibraries<std::string>> probe_libraries();

/// Checks a program before anything is looked up or compiled: a source and a name, and no
/// option that chooses the target (--offload-arch, --gpu-architecture, --cuda-gpu-arch, with or
/// without a value: hipRTC 5.2 aborts the process on an unknown target given that way, and the
/// target is part of the key). Errors: invalid_argument.
Expected<void> check_program(const Program& program);

/// The key of `program` for `target`, which must already be canonical (canonical_target), built
/// with `toolchain` under `config` (the environment variables that change hipRTC's code), and
/// the files it was built from.
std::pair<Key, detail::Dependencies> make_key(const Toolchain& toolchain, std::string_view target,
                                              const Config& config, const Program& program);

} // namespace jitcache::hip
