#pragma once

#include <jitcache/cache.hpp>
#include <jitcache/cohort.hpp>
#include <jitcache/export.hpp>
#include <jitcache/tuning.hpp>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <string>
#include <string_view>
#include <vector>

namespace jitcache::opencl {

/// A built program and how it was obtained.
struct Program {
  /// The built program, for `device` only. The caller owns one reference and must
  /// clReleaseProgram it; the cache's memory tier holds its own reference.
  cl_program program = nullptr;
  BuildInfo info;
};

/// Returns a program built from `source` with `options` for `device` of `context`.
///
/// Hit (memory tier): the same cl_program as the earlier call for this key, context and device,
/// retained once more. Hit (a persistent tier): clCreateProgramWithBinary + clBuildProgram.
/// Miss: clCreateProgramWithSource + clBuildProgram; the binary is read and stored in the
/// background (finished by Cache::flush() or ~Cache). A stored binary the runtime rejects is
/// evicted, counted as "rejected", and the program is rebuilt from source.
///
/// The key covers the device identity, the runtime's version, `options` as given, `source`, and
/// the content of every header reachable through `#include` from `source` via the `-I` paths in
/// `options` (and the current directory).
///
/// Errors: invalid_argument (empty source, null context/device), compile_failed (with the build
/// log; nothing is stored), runtime_error (naming the OpenCL call). Thread-safe: concurrent
/// calls for the same key, context and device compile once.
JITCACHE_EXPORT Expected<Program> build_program(Cache& cache, cl_context context,
                                                cl_device_id device, std::string_view source,
                                                std::string_view options = {});

/// One request of a set built together (build_programs).
struct Request {
  cl_context context = nullptr;
  cl_device_id device = nullptr;
  std::string source;
  std::string options;
};

/// build_program() for each of `requests`, together with the other ranks of `exchange` (each
/// calling with its own set; see jitcache/cohort.hpp and jitcache/mpi.hpp): each program that no
/// rank's tiers hold is compiled once for the whole job, by one of the ranks that asked for it
/// (spread across them), and its binary sent to the others that asked, which build it from the
/// binary; one rank per node writes it into the node's user tier. A binary a rank's tiers hold
/// (a package, the user tier) is sent instead of compiled. A rank whose binary does not come
/// within options.timeout (its provider stalled, or a rank never joined) compiles it itself.
/// Collective: every rank of `exchange` must call it (a rank that does not is waited for until
/// options.timeout). Returns one result per request, in order: the program, or the error its
/// compile gave on whichever rank compiled it (compile_failed with the log), or as
/// build_program(). `report` (may be null) says what this rank did.
JITCACHE_EXPORT std::vector<Expected<Program>>
build_programs(Cache& cache, cohort::Exchange& exchange, const std::vector<Request>& requests,
               const cohort::Options& options = {}, cohort::Report* report = nullptr);

/// The key build_program uses for this request under `config` (which supplies the environment
/// variables that change PoCL's code generation): device and toolchain identity, options,
/// source and headers; for `jitcache explain` and tests. Errors: runtime_error naming the
/// failing clGetDeviceInfo/clGetPlatformInfo.
JITCACHE_EXPORT Expected<Key> make_key(const Config& config, cl_device_id device,
                                       std::string_view source, std::string_view options);

/// `device` as the tuning database knows it (jitcache/tuning.hpp): backend "opencl", its name,
/// and the device and toolchain fields of its kernel key (platform, device, driver, PoCL build
/// hash, jitcache version), so a record measured on it never applies to another device or
/// runtime version. Errors: runtime_error naming the failing clGetDeviceInfo/clGetPlatformInfo.
/// Thread-safe; asks the runtime once per device per process.
JITCACHE_EXPORT Expected<tuning::Device> tuning_device(cl_device_id device);

} // namespace jitcache::opencl
