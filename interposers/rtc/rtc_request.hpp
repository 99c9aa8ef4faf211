#pragma once

#include "core/engine/runtime.hpp"
#include "core/key/dependencies.hpp"
#include "core/key/library_identity.hpp"
#include "interposers/rtc/library_answers.hpp"

#include <jitcache/cache.hpp>
#include <jitcache/expected.hpp>

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitcache::rtc {

// What NVRTC and hipRTC share (their C APIs differ only in names and types): the request a
// program makes, what its compile produced, and the way both go through the core's request
// pipeline. The front-ends' API files (interposers/nvrtc, interposers/hiprtc) hold only what
// differs; interposers/rtc/rtc_interposer.hpp holds the C API's logic, once.

/// A header given in memory to create-program.
struct Header {
  std::string name;
  std::string content;
};

/// A program as the application made it: what create-program, add-name-expression and
/// compile-program were given (the members flatten_request and describe_request read).
struct Request {
  std::string name; ///< as given; empty for a null name (the runtime says both mean the same)
  std::string source;
  std::vector<Header> headers;
  std::vector<std::string> name_expressions;
  std::vector<std::string> options;
};

/// One output the compile produced, answered as the runtime answered it: the result of its size
/// call, the size, and the result of the call that copies it with the bytes it wrote.
struct Output {
  int size_result = 0;
  std::size_t size = 0;
  /// nullopt: the copy was not asked for (the size call failed): a hit asks the real runtime.
  std::optional<int> copy_result;
  std::string bytes; ///< `size` bytes, as the runtime wrote them
};

/// Everything a successful compile produced, stored as one entry: the compile's result, each
/// output by its API name ("PTX", "CUBIN", "LTOIR", "ProgramLog", "Code"), the lowered name (or
/// the failing result) of each name expression.
struct Outputs {
  int compile_result = 0;
  std::map<std::string, Output> outputs;
  std::map<std::string, std::pair<int, std::string>> lowered; ///< expression -> result, name
};

/// The stored form of `outputs` (magic, format version, fields), and back; nullopt on bytes
/// that are not a whole one. You MUST bump k_outputs_format when Outputs changes.
std::string encode_outputs(const Outputs& outputs);
std::optional<Outputs> decode_outputs(std::string_view bytes);
inline constexpr std::uint32_t k_outputs_format = 1;

/// What tells one runtime's front-end from the other's, besides the API's names.
struct FrontEnd {
  const char* name;         ///< "nvrtc", "hiprtc": the backend name of its requests and counters
  const char* runtime_name; ///< "NVRTC", "hipRTC": for messages
  /// The options whose include directory counts by content.
  std::vector<detail::IncludeFlag> include_flags;
  /// Options (prefixes) the front-end does not model: files named besides include directories
  /// (a pre-included header, a precompiled header), files written (temporaries, timings), or a
  /// target the runtime takes from the device. A request with one goes to the runtime untouched.
  std::vector<std::string_view> unmodelled_options;
  /// The options (prefixes ending in '=') that name the target; each is also taken as its own
  /// element followed by the target ("-arch", "sm_90").
  std::vector<std::string_view> target_options;
  /// The target the runtime compiles for when no option names one (NVRTC's documented default
  /// arch); empty when a request must name one (hipRTC without one asks the device).
  std::string_view default_target;
  /// Whether "x" includes are searched in the program name's directory (NVRTC), first.
  bool searches_program_dir = false;
  /// Where the real runtime is found, for its identity remembered across processes.
  detail::LibrarySearch search;
  /// The real runtime's identity (key fields) and the library files it was read from. Opens
  /// the real library. Errors: the runtime is missing or answers no version.
  std::function<
      Expected<detail::ProbedLibraries<std::vector<std::pair<std::string, std::string>>>>()>
      probe;
  /// The answers of the calls that depend on the runtime's library alone (its version, its
  /// targets), remembered so that asking them opens no runtime (library_answers()).
  AnswersSource answers;
};

/// Runs the real runtime's compile of a request: the outputs of a successful compile, or an
/// error (compile_failed for a compile that failed: the caller answers from the real program).
using RealCompile = std::function<Expected<Outputs>()>;

/// Whether `request`'s options are all modelled by `front_end` (see FrontEnd).
bool modelled(const FrontEnd& front_end, const Request& request);

/// The target `request` compiles for: those its options name (FrontEnd::target_options), in
/// order and joined by ',', else the front-end's default target. What BuildInfo::device says,
/// the key's device field and the target a package of its entries serves.
std::string target_of(const FrontEnd& front_end, const Request& request);

/// The one cache of the process for the front-ends, made at first use from the process's
/// configuration (Config::from_environment, read once) and flushed when the process exits.
Cache& process_cache();

/// Whether the front-end named `name` is off (JITCACHE_NVRTC=0, ...): read without making the
/// cache, so that a front-end turned off creates nothing.
bool turned_off(const char* name);

/// Whether the process's exit has come to the front-end's own objects: set by hooks that
/// process_cache() and the configuration register once made (std::atexit), which run before
/// either is destroyed (and before the front-end's description, made before them). A call that
/// sees it touches none of them: the real runtime answers it, as without the front-end.
bool exiting();

/// `options` compiling for `target` instead: each option that names a target
/// (FrontEnd::target_options) left out, and the first such flag with `target` put where the
/// first of them was (first of all when none was).
std::vector<std::string> with_target(const FrontEnd& front_end,
                                     const std::vector<std::string>& options,
                                     const std::string& target);

/// Serves `request` through the core's request pipeline (detail::serve_request): the stored
/// outputs on a hit (no runtime opened where the identity is remembered); on a miss `compile`
/// runs the real runtime and its outputs are stored. `info`, when given, gets how it was
/// answered. Errors: those of `compile` (as it gave them) and every failure of the front-end
/// (the caller then uses the real runtime).
Expected<std::shared_ptr<const Outputs>> serve(Cache& cache, const FrontEnd& front_end,
                                               const Request& request, const RealCompile& compile,
                                               BuildInfo* info = nullptr);

/// The key of `request` with the runtime this process opens (detail::current_key): looks
/// nothing up and compiles nothing. Errors: the runtime's probe, an option not modelled.
Expected<Key> key_of(const Config& config, const FrontEnd& front_end, const Request& request);

} // namespace jitcache::rtc
