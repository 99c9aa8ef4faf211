#pragma once

#include <jitcache/cache.hpp>

#include <hip/hip_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitcache::hip {

/// One HIP translation unit and everything that shapes its code object.
struct Source {
  /// hipRTC's program name: shown in diagnostics, part of the key. Must not be empty.
  std::string name = "program.hip";
  /// The HIP source. Must not be empty.
  std::string text;
  /// hipRTC options exactly as given, split like a shell command line ("-DN=4 -I 'my dir'").
  /// The target is not an option: `--offload-arch`/`--gpu-architecture` are refused
  /// (invalid_argument), because the target comes from the device or the `target` argument.
  std::string options;
  /// Headers given in memory: the name the source #includes, and its content. They win over
  /// files of the same name.
  std::vector<std::pair<std::string, std::string>> headers;
  /// Name expressions (e.g. "axpy<float>") whose lowered (mangled) names are wanted; each one
  /// also instantiates its template, so they are part of the key.
  std::vector<std::string> name_expressions;
};

/// A name expression and the symbol hipRTC lowered it to.
struct LoweredName {
  std::string expression; ///< as given, e.g. "axpy<float>"
  std::string symbol;     ///< e.g. "_Z4axpyIfEviT_PKS1_PS1_"
};

/// A code object compiled (or found) for one target, without loading it anywhere.
struct CodeObject {
  std::string target;                     ///< canonical target id, e.g. "gfx90a:sramecc+:xnack-"
  std::string code;                       ///< AMDGPU ELF code object, as hipModuleLoadData takes it
  std::vector<LoweredName> lowered_names; ///< one per name expression, in the order given
  BuildInfo info;                         ///< how it was obtained (info.device is the target)
};

/// A code object loaded with hipModuleLoadData on one device. Copies share the module.
class Module {
public:
  /// The module; valid while this Module, a copy of it, or the Cache that returned it lives.
  /// Loaded on the device passed to load_module (HIP modules belong to one device).
  hipModule_t get() const noexcept { return static_cast<hipModule_t>(m_module.get()); }

  /// The kernel called `name`: a name expression given to load_module (looked up by its lowered
  /// name), else a symbol as is (an extern "C" name, or a mangled one). Valid as long as get().
  /// Errors: runtime_error naming hipModuleGetFunction and the symbol (hipErrorNotFound, ...).
  Expected<hipFunction_t> function(std::string_view name) const;

  /// The lowered name of `expression`, or nullopt when it was not among the name expressions.
  std::optional<std::string> lowered_name(std::string_view expression) const;

  /// The canonical target id of the device it was loaded for.
  const std::string& target() const noexcept { return m_target; }

  /// How it was obtained: the tier that answered, timings, key, size; info().device is the target.
  const BuildInfo& info() const noexcept { return m_info; }

private:
  friend Expected<Module> load_module(Cache& cache, int device, const Source& source);
  Module(std::shared_ptr<void> module, std::string target, std::vector<LoweredName> lowered,
         BuildInfo info);

  std::shared_ptr<void> m_module;
  std::string m_target;
  std::vector<LoweredName> m_lowered;
  BuildInfo m_info;
};

/// Returns `source` compiled for HIP device `device` (an ordinal, as for hipSetDevice) and
/// loaded there.
///
/// Hit (memory tier): the module loaded earlier for this key and device. Hit (a persistent
/// tier): the stored code object is checked (an AMDGPU ELF for the device's target) and loaded
/// with hipModuleLoadData. Miss: hipRTC compiles for the device's full target id (gcnArchName,
/// e.g. "gfx90a:sramecc+:xnack-"), the code object and the lowered names are stored, then loaded.
/// A stored code object that fails the check or that the runtime refuses is evicted, counted as
/// "rejected", and compiled again. The calling thread's current device is restored on return.
///
/// A repeated identical request (same device and byte-identical `source`) is answered from the
/// memory tier without building the key, so header files edited while the process runs are
/// noticed only by a new process or a new Cache.
///
/// Errors: invalid_argument (empty name or text, a target option, unbalanced quotes in the
/// options), runtime_missing (libamdhip64 or libamd_comgr cannot be opened), no_device (no AMD
/// GPU, or `device` out of range; the message names the HIP error, e.g. hipErrorNoDevice),
/// unsupported (the device's target is unknown to the installed toolchain), compile_failed (with
/// hipRTC's log; nothing is stored), load_failed (the runtime refused a freshly compiled code
/// object), runtime_error (any other HIP call; the message names it). Never aborts the process
/// and never waits forever on a hung driver (runtime initialisation is bounded).
/// Thread-safe: concurrent calls for the same key and device compile and load once.
Expected<Module> load_module(Cache& cache, int device, const Source& source);

/// Returns `source` compiled for `target` (e.g. "gfx90a", "gfx90a:xnack+"), through the cache,
/// without a GPU: what `jitcache build --backend hip --arch TARGET` does. The target is
/// validated against the installed toolchain first (see supported_targets()); feature order
/// does not matter ("gfx90a:xnack-:sramecc+" is the same entry as "gfx90a:sramecc+:xnack-").
/// A stored code object that is not an AMDGPU ELF for `target` is evicted, counted as
/// "rejected", and compiled again.
/// Errors: invalid_argument (a malformed target id, or as load_module), unsupported (a target or
/// feature the toolchain does not know; the message lists the supported ones), runtime_missing,
/// compile_failed (with hipRTC's log; nothing is stored), runtime_error. Thread-safe.
Expected<CodeObject> build_code_object(Cache& cache, std::string_view target,
                                       const Source& source);

/// The key `source` has for `target`: the canonical target id (device); the hipRTC library file
/// and size, comgr's version, library file and size, jitcache's version (toolchain); the options
/// as given; the program name, source and name expressions; every header (in memory, and found
/// through #include in the -I directories of the options and the current directory).
/// Errors: as build_code_object, short of compiling.
Expected<Key> make_key(std::string_view target, const Source& source);

/// The full target id of HIP device `device` (hipDeviceProp_t::gcnArchName), canonicalised.
/// Errors: runtime_missing, no_device (naming the HIP error), runtime_error.
Expected<std::string> device_target(int device);

/// Every target the installed toolchain compiles, from comgr's ISA list, each with the features
/// it takes, e.g. "gfx1030", "gfx90a[:sramecc+|-][:xnack+|-]". Errors: runtime_missing.
Expected<std::vector<std::string>> supported_targets();

} // namespace jitcache::hip
