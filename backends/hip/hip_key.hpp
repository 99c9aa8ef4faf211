#pragma once

#include "backends/hip/hip_targets.hpp"
#include "core/dependencies.hpp"
#include "core/library_identity.hpp"
#include "core/manifest.hpp"

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

/// The stored form of a toolchain, and back; nullopt on bytes that are not one.
std::string encode_toolchain(const Toolchain& toolchain);
std::optional<Toolchain> decode_toolchain(std::string_view bytes);

/// The libraries toolchain_for_keys() reads the identity from: libamdhip64, hipRTC and comgr by
/// the sonames matching the headers built against.
const detail::LibrarySearch& library_search();

/// hipRTC's and comgr's identity for building keys. Opening libamdhip64 and comgr takes about
/// 20 ms, twenty times a hit; so the user tier remembers the identity of the libraries opened,
/// vouched for by the stamps of the library files and their directories, /etc/ld.so.cache and
/// the LD_LIBRARY_PATH directories (what decides which libraries dlopen finds). When those are
/// unchanged, the remembered identity is returned and `*remembered` set: neither library is
/// opened. Otherwise this is toolchain(), remembered for the next process. Errors: as
/// toolchain().
Expected<Toolchain> toolchain_for_keys(detail::CacheCore& core, bool* remembered);

/// Checks a program before anything is looked up or compiled: a source and a name, and no
/// option that chooses the target (--offload-arch, --gpu-architecture, --cuda-gpu-arch, with or
/// without a value: hipRTC 5.2 aborts the process on an unknown target given that way, and the
/// target is part of the key). Errors: invalid_argument.
Expected<void> check_program(const Program& program);

/// The key of `program` for `target`, which must already be canonical (canonical_target), built
/// with `toolchain` under `config` (the environment variables that change hipRTC's code), and
/// the files it was built from.
std::pair<Key, Dependencies> make_key(const Toolchain& toolchain, std::string_view target,
                                      const Config& config, const Program& program);

/// The key make_key() gives, recalled without reading a header when the user tier remembers it
/// for this request and the files it was built from are unchanged; built (and remembered for
/// the next process) otherwise. `request` holds every argument of the request
/// (detail::flatten_request).
GuardedKey remembered_key(detail::CacheCore& core, const Toolchain& toolchain,
                          std::string_view target, const Program& program,
                          std::string_view request);

} // namespace jitcache::hip
