#pragma once

#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_targets.hpp"
#include "core/key/dependencies.hpp"
#include "core/key/library_identity.hpp"
#include "core/tiers/packages/package_target.hpp"

#include <jitcache/config.hpp>
#include <jitcache/cuda.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/key.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::cuda {

/// NVRTC's identity, as key fields, and what it can target.
struct Toolchain {
  std::string version;    ///< "13.0"
  std::string build;      ///< the library file's size: "109338064 bytes"
  std::vector<int> archs; ///< nvrtcGetSupportedArchs, ascending: 75, 80, ..., 121
  friend bool operator==(const Toolchain& a, const Toolchain& b) {
    return a.version == b.version && a.build == b.build && a.archs == b.archs;
  }
};

/// What NVRTC says of itself, as it says it: nvrtcVersion's numbers and nvrtcGetSupportedArchs'
/// list in NVRTC's order (what the NVRTC front-end answers those calls with).
struct NvrtcSays {
  int major = 0;          ///< nvrtcVersion's major number
  int minor = 0;          ///< and its minor number
  std::vector<int> archs; ///< nvrtcGetSupportedArchs, in NVRTC's order
};

/// Asks the NVRTC of `api` its version and its archs. Errors: runtime_error naming the failing
/// NVRTC call.
Expected<NvrtcSays> ask_nvrtc(const NvrtcApi& api);

/// The identity of the NVRTC `api` was loaded from (its file: NvrtcApi::file), from ask_nvrtc().
/// Errors: those of ask_nvrtc().
Expected<Toolchain> probe_toolchain(const NvrtcApi& api);

/// The loaded NVRTC's identity, queried once per process. Errors: as nvrtc(), or runtime_error
/// naming the failing NVRTC call.
Expected<const Toolchain*> toolchain();

/// The stored form of a toolchain, and back; nullopt on bytes that are not one. A package's
/// toolchain (packaged_toolchain()) has no archs.
std::string encode_toolchain(const Toolchain& toolchain);
std::optional<Toolchain> decode_toolchain(std::string_view bytes);

/// What NVRTC's identity is remembered for in the user tier (see detail::LibrarySearch): the
/// soname dlopen finds, in the toolkit's library directory.
const detail::LibrarySearch& library_search();

/// toolchain() in its stored form, with the NVRTC library file it was read from. Errors: as
/// toolchain().
Expected<detail::ProbedLibraries<std::string>> probe_libraries();

/// What a package serving `target` holds: the key's device fields of that target.
detail::PackageTarget package_target(const Target& target);

/// The NVRTC identity (version and build; no archs) a package's entries were made with, from
/// their toolchain section; nullopt when `fields` name no NVRTC. A packaged cubin is ready
/// whatever NVRTC this machine has, or none: keys built with this find it without opening
/// NVRTC.
std::optional<Toolchain> packaged_toolchain(const std::vector<KeyField>& fields);

/// The toolkit's include directories that exist on this machine: the CCCL folder (CUDA 13 keeps
/// CUB, Thrust and libcu++ in include/cccl) before include/ itself.
const std::vector<std::filesystem::path>& toolkit_include_dirs();

/// The key of `program` compiled for `target` under `config` (fields as load_module() documents),
/// and the files it was built from.
std::pair<Key, detail::Dependencies> make_key(const Toolchain& toolchain, const Target& target,
                                              const Config& config, const Program& program);

} // namespace jitcache::cuda
