#pragma once

#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_targets.hpp"
#include "core/dependencies.hpp"
#include "core/manifest.hpp"

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

using detail::GuardedKey;

/// NVRTC's identity, as key fields, and what it can target.
struct Toolchain {
  std::string version;    ///< "13.0"
  std::string build;      ///< the library file's size: "109338064 bytes"
  std::vector<int> archs; ///< nvrtcGetSupportedArchs, ascending: 75, 80, ..., 121
  friend bool operator==(const Toolchain& a, const Toolchain& b) {
    return a.version == b.version && a.build == b.build && a.archs == b.archs;
  }
};

/// The loaded NVRTC's identity, queried once per process. Errors: as nvrtc(), or runtime_error
/// naming the failing NVRTC call.
Expected<const Toolchain*> toolchain();

/// NVRTC's identity for building keys. Opening NVRTC takes milliseconds (tens on a cold page
/// cache), more than loading a cubin; so the user tier remembers the identity of the library
/// opened, vouched for by the stamps of the library file and its directory, /etc/ld.so.cache
/// and the LD_LIBRARY_PATH directories (what decides which library dlopen finds). When those
/// are unchanged, the remembered identity is returned and `*remembered` set: NVRTC is not
/// opened. Otherwise this is toolchain(), remembered for the next process. Errors: as
/// toolchain().
Expected<Toolchain> toolchain_for_keys(detail::CacheCore& core, bool* remembered);

/// The NVRTC identity toolchain_for_keys() would return without opening NVRTC; nullopt when
/// none is remembered (nothing is opened then either).
std::optional<Toolchain> recalled_toolchain(detail::CacheCore& core);

/// The NVRTC identities (version and build; no archs) that the packages' entries for `target`
/// were made with (Provenance::toolchains), but for `except`'s. A packaged cubin is ready
/// whatever NVRTC this machine has, or none: keys built with these find it without opening
/// NVRTC. Empty when no package serves `target`.
std::vector<Toolchain> packaged_toolchains(detail::CacheCore& core, const Target& target,
                                           const std::optional<Toolchain>& except);

/// The toolkit's include directories that exist on this machine: the CCCL folder (CUDA 13 keeps
/// CUB, Thrust and libcu++ in include/cccl) before include/ itself.
const std::vector<std::filesystem::path>& toolkit_include_dirs();

/// The key of `program` compiled for `target` under `config` (fields as load_module() documents),
/// and the files it was built from.
std::pair<Key, Dependencies> make_key(const Toolchain& toolchain, const Target& target,
                                      const Config& config, const Program& program);

/// The key make_key() gives, recalled without reading a header when the user tier remembers it
/// for this request and the files it was built from are unchanged: a PendingKey whose guess()
/// can be loaded while the stamps are checked in the background. `request` holds every argument
/// of the request (the program and the current directory). Every argument must outlive the
/// result (it builds the key from them on settle()).
detail::PendingKey remembered_key(detail::CacheCore& core, const Toolchain& toolchain,
                                  const Target& target, const Program& program,
                                  std::string_view request);

} // namespace jitcache::cuda
