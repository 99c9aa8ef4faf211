#pragma once

#include "core/engine/compiled.hpp"
#include "core/engine/handle_cache.hpp"
#include "core/engine/request_hash.hpp"
#include "core/key/dependencies.hpp"
#include "core/key/library_identity.hpp"
#include "core/record/request_record.hpp"
#include "core/tiers/packages/package_target.hpp"

#include <jitcache/expected.hpp>
#include <jitcache/key.hpp>
#include <jitcache/store.hpp>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace jitcache::detail {

/// Where a loaded handle lives: the memory tier of handles keeps one per (key, place). A null
/// member is "any"; CUDA names the context, HIP the device, OpenCL both.
struct Place {
  const void* context = nullptr;
  const void* device = nullptr;
};

/// What the request pipeline (core/engine/pipeline.hpp) asks of a backend for one request: the
/// narrow interface each backend implements once (backends/<name>/<name>_runtime.cpp), and all a
/// backend knows of the core. One object serves one request on one thread; the pipeline calls
/// check() first, then the others in any order and number, select() before what depends on
/// the selected compiler.
///
/// A compiler's identity is opaque to the pipeline: the runtime's stored form of it (bytes it
/// encodes and reads back), compared byte for byte.
class Runtime {
public:
  using Handle = HandleCache::Handle;
  virtual ~Runtime() = default;

  /// "opencl", "cuda", "hip".
  virtual const char* backend() const = 0;
  /// Checks the request and gets what it runs on (the current context, the device). Errors:
  /// invalid_argument saying what is wrong with the request; the runtime's (no driver, no
  /// context, no such device).
  virtual Expected<void> check() = 0;
  /// Adds every argument of the request to `out`, part by part where it lies (see
  /// hash_request_arguments): what the memory tier of handles finds a repeated request by, and
  /// part of the name its key is remembered under.
  virtual void arguments(RequestParts& out) const = 0;
  /// Where the handle is loaded; nullopt for a request that loads nothing (an offline compile:
  /// its handle is a copy of the entry's bytes).
  virtual std::optional<Place> place() const = 0;

  /// The library search the compiler's identity is remembered for in the user tier, so that a
  /// hit opens no compiler; nullptr when probe() is cheap (OpenCL asks the device).
  virtual const LibrarySearch* library_search() const = 0;
  /// The compiler's identity (stored form) and the library files it was read from. May open
  /// the compiler; the backend reads it once per process. Errors: the runtime's (not
  /// installed, a failing query).
  virtual Expected<ProbedLibraries<std::string>> probe() = 0;
  /// The device fields packages are asked about (PackageTarget), with `known` the identity
  /// recalled without opening the compiler (nullptr: none). Errors: when the target cannot be
  /// told without opening the compiler; the pipeline then skips the packages step.
  virtual Expected<PackageTarget> package_target(const std::string* known) = 0;
  /// Whether package_target() needs `known` to tell the target without opening the compiler
  /// (hipRTC's target ids are made canonical with the remembered table). When it does not, a
  /// request that a package serves is answered without reading the user tier at all.
  virtual bool package_target_needs_identity() const { return true; }
  /// The identity a package's entries were made with, from their toolchain section (key
  /// fields); nullopt when `fields` name no compiler of this backend or the one `known` is.
  virtual std::optional<std::string> packaged_identity(const std::vector<KeyField>& fields,
                                                       const std::string* known) const = 0;
  /// The part of compiler `identity` (probe()'s, or packaged_identity()'s) that names the keys
  /// remembered for it (record_name): without what a package's identity leaves out (the targets
  /// the compiler supports), so that a key remembered under the probed identity and a package's
  /// portable manifest, looked for under the package's, share one name.
  virtual std::string identity_in_names(const std::string& identity) const { return identity; }

  /// Chooses the target for compiler `identity` (from probe(), the user tier or a package):
  /// what make_key(), compile() and load() use from then on. Returns its name
  /// (BuildInfo::device). Errors: no_device or unsupported when this compiler cannot target
  /// the device; corrupt when `identity` cannot be read.
  virtual Expected<std::string> select(const std::string& identity) = 0;
  /// The request's key under the selected compiler, and the files it was built from.
  virtual std::pair<Key, Dependencies> make_key() const = 0;
  /// Compiles the request for the selected target (the compiler is the one selected: the
  /// pipeline checked). `key` is the request's. When the result has no entry, `handle` is set to
  /// the loaded result. Errors: compile_failed with the log; the runtime's.
  virtual Expected<Compiled> compile(const Key& key, Handle& handle) = 0;
  /// Puts a stored entry (bytes in place, valid for the call only) to use: loads it, or copies
  /// it out. `note` gets what a person should know about the load (a PTX JIT). Errors:
  /// load_failed or corrupt when the entry is bad (it is refused); others are the request's.
  virtual Expected<Handle> load(const EntryView& entry, std::string& note) = 0;
  /// What a request answered by `handle` from the memory tier of handles still says (a PTX
  /// module JIT-compiled by the driver says so each time); empty for most.
  virtual std::string memory_note(const Handle& handle) const {
    static_cast<void>(handle);
    return {};
  }
  /// Whether the remembered key's stamps are checked on a thread of their own while its entry
  /// loads: worth it where a load takes milliseconds and a key has hundreds of headers (a CUB
  /// module), not where a thread's start costs more than the check. The thread is not joined
  /// (its exit would cost the process as much as its start).
  virtual bool check_stamps_aside() const { return false; }
  /// The request as a record carries it (record_request fills the key's part).
  virtual RequestRecord describe() const = 0;
};

} // namespace jitcache::detail
