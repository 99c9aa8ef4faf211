#pragma once

#include <jitcache/cache.hpp>
#include <jitcache/cohort.hpp>
#include <jitcache/export.hpp>
#include <jitcache/tuning.hpp>

#include <hip/hip_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::hip {

/// A header given in memory, as hipRTC takes them: `#include "name"` and `#include <name>` find
/// it before any file.
struct Header {
  std::string name;
  std::string content;
};

/// What to compile, in hipRTC's terms (hiprtcCreateProgram + hiprtcCompileProgram).
struct Program {
  /// The HIP C++ source. Must not be empty.
  std::string source;
  /// hipRTC's program name, used in diagnostics. Must not be empty. (hipRTC searches neither
  /// its directory nor the current one for `#include "x"`: give -I options.)
  std::string name = "program.hip";
  /// hipRTC options, one option per element, exactly as hipRTC takes them ("-I/dir", "-I",
  /// "/dir", "-DN=4", "-O3"). Not --offload-arch/--gpu-architecture: jitcache chooses the target
  /// (and hipRTC 5.2 aborts the process on an unknown one given that way).
  std::vector<std::string> options;
  /// Headers given in memory.
  std::vector<Header> headers;
  /// C++ names to instantiate and look up, e.g. "axpy<float>" for a templated kernel. Their
  /// lowered (mangled) names are stored with the code object, so Module::function() finds them
  /// on a hit too.
  std::vector<std::string> name_expressions;
};

/// A module loaded on one device, and how it was obtained.
struct JITCACHE_EXPORT Module {
  /// The loaded module. It stays loaded while this Module (or a copy) or the Cache lives,
  /// whichever is longer; never hipModuleUnload it.
  hipModule_t module = nullptr;
  /// How it was obtained; info.device is the device's canonical target id.
  BuildInfo info;
  /// Name expression -> lowered name, for the program's name_expressions.
  std::map<std::string, std::string> lowered_names;
  /// Keeps `module` loaded (the cache's memory tier holds another reference).
  std::shared_ptr<void> owner;

  /// The kernel `name`: one of the program's name expressions (looked up by its lowered name),
  /// or else a symbol of the module (an extern "C" name, or a lowered name). Thread-safe.
  /// Errors: runtime_error naming hipModuleGetFunction and the symbol (e.g. hipErrorNotFound).
  Expected<hipFunction_t> function(std::string_view name) const;
};

/// A code object compiled for a target that need not be present (offline precompile).
struct CodeObject {
  std::string code;   ///< the AMDGPU ELF code object, as hipModuleLoadData takes it
  std::string target; ///< canonical target id, e.g. "gfx90a" or "gfx90a:sramecc+:xnack-"
  std::map<std::string, std::string> lowered_names; ///< name expression -> lowered name
  BuildInfo info;                                   ///< load_ms is 0: nothing is loaded
};

/// Returns `program` loaded (hipModuleLoadData) on the calling thread's current device
/// (hipGetDevice), compiled for that device's full target id (hipDeviceProp_t::gcnArchName,
/// e.g. "gfx90a:sramecc+:xnack-").
///
/// Hit (memory tier): the module already loaded for this key and device (a repeated identical
/// request whose headers are all in memory skips key building; one that reads header files
/// rebuilds its key, so that a header edited meanwhile is seen). Hit (a persistent tier): the
/// stored code object, once checked to be an AMDGPU ELF for the device's target, is loaded.
/// Miss: hipRTC compiles, the code object and the lowered names are stored, then loaded.
/// Concurrent calls for the same key compile once; calls for the same key and device load once.
/// A stored code object that fails the check, whose metadata cannot be read, or that the runtime
/// refuses (hipErrorInvalidImage, hipErrorNoBinaryForGpu, ...) is evicted, counted as "rejected",
/// and rebuilt (info.note says so).
///
/// The key covers the canonical target id, the hipRTC library file (name and size), comgr's
/// version and library file, jitcache's version, the environment variables that change hipRTC's
/// code, each option as given (an include directory by what it provides, not its spelling), the
/// program name and source, the name expressions, every in-memory header, and every header file
/// reachable through `#include` via the -I/-isystem/-iquote/-idirafter options, by content.
///
/// Never aborts the process and never waits forever: the first HIP call (runtime
/// initialisation) is given a time limit. Errors: invalid_argument (empty source or name, a
/// target option), runtime_missing (libamdhip64 or libamd_comgr cannot be opened), no_device
/// (no AMD GPU; the message names the HIP error, e.g. "hipGetDeviceCount failed:
/// hipErrorNoDevice (100)"), unsupported (a device whose target the installed toolchain does not
/// know), compile_failed (with hipRTC's log; nothing is stored), load_failed (the runtime refused
/// a fresh code object), runtime_error (naming the HIP or hipRTC call). Thread-safe.
JITCACHE_EXPORT Expected<Module> load_module(Cache& cache, const Program& program);

/// Compiles (or finds) `program` for `target` ("gfx90a", "gfx90a:xnack+") without a GPU, and
/// stores it: a later load_module() on a device of that target id, with the same program, is a
/// hit. Feature order does not matter ("gfx90a:xnack-:sramecc+" is "gfx90a:sramecc+:xnack-").
/// The target is checked against the installed toolchain before hipRTC sees it. Counted like
/// load_module(); a stored code object that is not an AMDGPU ELF for `target` is evicted,
/// counted as "rejected", and rebuilt.
///
/// Errors: invalid_argument (empty source or name, a target option, a malformed target id),
/// unsupported (a target or feature the installed toolchain does not know; the message lists
/// those it does), runtime_missing, compile_failed (with hipRTC's log; nothing is stored),
/// runtime_error (naming the hipRTC call). Thread-safe.
JITCACHE_EXPORT Expected<CodeObject> compile(Cache& cache, std::string_view target,
                                             const Program& program);

/// One request of a set compiled together (compile_together): `program` for `target`.
struct Offline {
  std::string target; ///< "gfx90a"; must not be empty
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
JITCACHE_EXPORT std::vector<Expected<CodeObject>>
compile_together(Cache& cache, cohort::Exchange& exchange, const std::vector<Offline>& requests,
                 const cohort::Options& options = {}, cohort::Report* report = nullptr);

/// The key compile(target) would use with a Cache configured by `config` (which supplies the
/// compiler-affecting environment); with `target` empty, the key load_module() would use on the
/// current device. Reads the header files; compiles nothing. For `jitcache explain` and tests.
/// Errors: as compile() and load_module() give them before compiling.
JITCACHE_EXPORT Expected<Key> make_key(const Config& config, const Program& program,
                                       std::string_view target = {});

/// The canonical full target id of HIP device `device` (an ordinal, as for hipSetDevice).
/// Errors: runtime_missing, no_device (no GPU, or `device` out of range; naming the HIP error),
/// unsupported (a target the installed toolchain does not know), runtime_error.
JITCACHE_EXPORT Expected<std::string> device_target(int device);

/// The current device (hipGetDevice) as the tuning database knows it (jitcache/tuning.hpp):
/// backend "hip", its name, and as its identity the name, the canonical target id, the compute
/// units (MIOpen's databases are per target and CU count), and the key's toolchain fields
/// (hipRTC, comgr and jitcache versions); so a record measured on one GPU or toolchain never
/// applies to another. Errors: runtime_missing, no_device (no GPU), unsupported (a target the
/// toolchain does not know), runtime_error naming the failing HIP call. Thread-safe.
JITCACHE_EXPORT Expected<tuning::Device> tuning_device();

/// Every target the installed toolchain compiles, from comgr's ISA list, with the features each
/// takes, e.g. "gfx1030", "gfx90a[:sramecc+|-][:xnack+|-]". Errors: runtime_missing.
JITCACHE_EXPORT Expected<std::vector<std::string>> supported_targets();

} // namespace jitcache::hip
