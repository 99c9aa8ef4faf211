#pragma once

#include <jitcache/cache.hpp>

#include <functional>
#include <memory>
#include <string>

namespace jitcache::test {

/// One backend driven through its public API, for the tables of cases every backend must pass
/// alike (expect_counter_table, expect_faults_contained).
class BackendCase {
public:
  virtual ~BackendCase() = default;
  /// "opencl", "cuda", "hip".
  virtual std::string backend() const = 0;
  /// Whether build() loads what it is answered (a loader's memory tier of handles answers a
  /// repeat); an offline compile's repeat is answered again by the tier that answered it.
  virtual bool loads() const = 0;
  /// Builds the backend's sample program through `cache` and checks that the result is the
  /// right kernel (it runs and computes the right answer where a device is present, else it is
  /// a binary for the right target that holds the kernel). Errors: the build's, or
  /// runtime_error saying what is wrong with the result.
  virtual Expected<BuildInfo> build(Cache& cache) = 0;
  /// Builds a program that does not compile (the error carries the compiler's log).
  virtual Expected<BuildInfo> build_broken(Cache& cache) = 0;
  /// The key build() uses under `config`.
  virtual Expected<Key> key(const Config& config) = 0;
  /// The key build() would use under `config` if the compiler (NVRTC; hipRTC and comgr; the
  /// OpenCL driver) were another build of it: what a package made on another machine holds.
  virtual Expected<Key> key_by_another_compiler(const Config& config) = 0;
};

/// The counters after every call, the same table for every backend: a miss, a memory hit, a
/// user-tier hit in a new Cache, a stored binary the backend refuses with the tier writable
/// (rejected, evicted, compiled and stored again) and read-only (compiled around it, nothing
/// written), and a compile error. Reports failures through GoogleTest.
void expect_counter_table(BackendCase& backend);

/// Packages first: a package whose entry was made with another build of the compiler (its key
/// says so) serves the request, with nothing compiled, though the key this machine's compiler
/// gives would not find it. Reports failures through GoogleTest.
void expect_packages_first(BackendCase& backend);

/// The remembered key: a request whose key the user tier remembers, and whose entry was evicted
/// since, is compiled again under that key and gives the right kernel; the next is a hit.
/// Reports failures through GoogleTest.
void expect_remembered_key_evicted(BackendCase& backend);

/// Fails each user-tier operation in turn (and the tier's open) on the hit and the miss path,
/// each case in a child process of its own (warnings are said once per process): every build
/// still gives the right kernel, with one warning when the failing operation was reached and
/// none otherwise. `make` is called in each child. Reports failures through GoogleTest.
void expect_faults_contained(const std::function<std::unique_ptr<BackendCase>()>& make);

} // namespace jitcache::test
