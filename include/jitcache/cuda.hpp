#pragma once

#include <jitcache/cache.hpp>
#include <jitcache/cohort.hpp>
#include <jitcache/export.hpp>
#include <jitcache/tuning.hpp>

#include <cuda.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::cuda {

/// A header given in memory, as NVRTC takes them: `#include "name"` and `#include <name>` find
/// it before any file.
struct Header {
  std::string name;
  std::string content;
};

/// What to compile, in NVRTC's terms (nvrtcCreateProgram + nvrtcCompileProgram).
struct Program {
  /// The CUDA C++ source. Must not be empty.
  std::string source;
  /// NVRTC's program name: used in diagnostics and __FILE__, and `#include "x"` in `source` is
  /// resolved against its directory (relative to the current directory).
  std::string name = "program.cu";
  /// NVRTC options, one option per element, exactly as NVRTC takes them ("-I/dir",
  /// "--std=c++17", "-DN=4"). Not -arch/--gpu-architecture: jitcache chooses the target. The
  /// toolkit's headers (CUB, Thrust, libcu++, cooperative groups) are on the include path after
  /// the directories given here, when the toolkit found at build time is present.
  std::vector<std::string> options;
  /// Headers given in memory.
  std::vector<Header> headers;
  /// C++ names to instantiate and look up, e.g. "scale<float, 4>" for a templated kernel. Their
  /// lowered (mangled) names are stored with the binary, so Module::function() finds them on a
  /// hit too.
  std::vector<std::string> name_expressions;
};

/// A module loaded into the current context, and how it was obtained.
struct JITCACHE_EXPORT Module {
  /// The loaded module. It stays loaded while this Module (or a copy) or the Cache lives,
  /// whichever is longer, and the context lives; never cuModuleUnload it.
  CUmodule module = nullptr;
  BuildInfo info;
  /// Name expression -> lowered name, for the program's name_expressions.
  std::map<std::string, std::string> lowered_names;
  /// Keeps `module` loaded (the cache's memory tier holds another reference).
  std::shared_ptr<void> owner;

  /// The kernel `name`: one of the program's name expressions (looked up by its lowered name),
  /// or else a symbol of the module (an extern "C" name, or a lowered name). Thread-safe.
  /// Errors: runtime_error naming cuModuleGetFunction and `name` (e.g. CUDA_ERROR_NOT_FOUND).
  Expected<CUfunction> function(std::string_view name) const;
};

/// A binary compiled for a target that need not be present (offline precompile).
struct Binary {
  std::string cubin;                                ///< the ELF cubin for `target`
  std::string target;                               ///< "sm_80"
  std::map<std::string, std::string> lowered_names; ///< name expression -> lowered name
  BuildInfo info;                                   ///< load_ms is 0: nothing is loaded
};

/// Returns `program` loaded into the current context (cuCtxGetCurrent), compiled for the exact
/// architecture of that context's device (-arch=sm_XY from its compute capability).
///
/// Hit (memory tier): the module already loaded for this key and context (a repeated identical
/// request skips key building and reads no header file again). Hit (a persistent tier):
/// cuModuleLoadData of the stored binary. Miss: NVRTC compiles, the binary and the lowered names
/// are stored, then loaded. Concurrent calls for the same key compile once; calls for the same key
/// and context load once. A stored binary the driver refuses (CUDA_ERROR_INVALID_IMAGE,
/// CUDA_ERROR_NO_BINARY_FOR_GPU, ...) or whose metadata cannot be read is evicted, counted as
/// "rejected", and rebuilt (info.note says so).
///
/// A device newer than the installed NVRTC can target gets PTX for the newest architecture NVRTC
/// knows, which the driver JIT-compiles on every load (its own cache, CUDA_CACHE_PATH, then
/// applies); the log and info.note say so.
///
/// The key covers the compute capability and the target, NVRTC's version and build (its library
/// file), jitcache's version, the environment variables that change NVRTC's code, each option as
/// given (an include directory by what it provides, not its spelling), the program name and
/// source, the name expressions, and every header reachable through `#include` (in memory, or a
/// file via the program's directory, the -I/--include-path options and the toolkit's include
/// directories), by content. NVRTC is needed for hits too (its version is part of the key).
///
/// Errors: invalid_argument (empty source, an -arch option, no current context), runtime_missing
/// (no driver, or no NVRTC), unsupported (a device older than NVRTC's oldest target),
/// compile_failed (with NVRTC's log; nothing is stored), load_failed (the driver refused a fresh
/// binary), runtime_error (naming the driver or NVRTC call). Thread-safe.
JITCACHE_EXPORT Expected<Module> load_module(Cache& cache, const Program& program);

/// Compiles (or finds) `program` for `arch` ("sm_80", also "sm_90a") without a driver or device,
/// and stores it: a later load_module() on a device of that architecture, with the same program,
/// is a hit. Counted like load_module().
///
/// Errors: invalid_argument (empty source, an -arch option, an arch not of the form sm_XY),
/// unsupported (an arch the installed NVRTC cannot target; the message lists those it can),
/// runtime_missing (no NVRTC), compile_failed (with NVRTC's log; nothing is stored),
/// runtime_error (naming the NVRTC call). Thread-safe.
JITCACHE_EXPORT Expected<Binary> compile(Cache& cache, std::string_view arch,
                                         const Program& program);

/// One request of a set compiled together (compile_together): `program` for `target`.
struct Offline {
  std::string target; ///< "sm_80"; must not be empty
  Program program;
};

/// compile() for each of `requests`, together with the other ranks of `exchange` (each calling
/// with its own set; see jitcache/cohort.hpp and jitcache/mpi.hpp): each (program, target) that
/// no rank's tiers hold is compiled once for the whole job, by one of the ranks that asked for
/// it (spread across them), and its binary sent to the others that asked; one rank per node
/// writes it into the node's user tier. A binary a rank's tiers hold (a package, the user tier)
/// is sent instead of compiled. A rank whose binary does not come within options.timeout (its
/// provider stalled, or a rank never joined) compiles it itself. Collective: every rank of
/// `exchange` must call it. Returns one result per request, in order: as compile() gives it, or
/// the error the compile gave on whichever rank compiled it (compile_failed with the log);
/// invalid_argument for an empty target. `report` (may be null) says what this rank did.
JITCACHE_EXPORT std::vector<Expected<Binary>>
compile_together(Cache& cache, cohort::Exchange& exchange, const std::vector<Offline>& requests,
                 const cohort::Options& options = {}, cohort::Report* report = nullptr);

/// The key compile(arch) would use with a Cache configured by `config` (which supplies the
/// compiler-affecting environment); with `arch` empty, the key load_module() would use in the
/// current context. Reads the header files; compiles nothing. For `jitcache explain` and tests.
/// Errors: as compile() and load_module() give them before compiling.
JITCACHE_EXPORT Expected<Key> make_key(const Config& config, const Program& program,
                                       std::string_view arch = {});

/// The current context's device as the tuning database knows it (jitcache/tuning.hpp): backend
/// "cuda", its name (cuDeviceGetName), and as its identity the name, the compute capability,
/// the CUDA version the driver supports (cuDriverGetVersion: 13000; not the driver's build),
/// NVRTC's version and build, and jitcache's version; so a record measured on an H100 never
/// applies to an H200 (both sm_90), nor after an NVRTC or CUDA upgrade. Opens NVRTC once per
/// process (a tuning compiles through it anyway). Errors: invalid_argument (no current
/// context), runtime_missing (no driver, or no NVRTC), no_device (the driver found no GPU),
/// runtime_error naming the failing driver or NVRTC call. Thread-safe.
JITCACHE_EXPORT Expected<tuning::Device> tuning_device();

} // namespace jitcache::cuda
