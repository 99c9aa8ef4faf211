#pragma once

#include <jitcache/export.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace jitcache {

/// The counters kept per backend (besides hits, which are kept per tier: see Stats::hits).
/// Their names (to_string) are what `jitcache stats` prints and the user tier stores: you MUST
/// keep each name when adding or reordering values.
enum class Counter {
  misses,         ///< requests no tier could answer (each compiled once)
  compiles,       ///< successful compiles
  compile_errors, ///< compiles that failed
  rejected,       ///< stored binaries the runtime (or the backend's checks) refused
  corrupt,        ///< stored entries failing verification, or stored for another request
  bytes_stored,   ///< payload bytes written to the persistent tiers
  saved_ns,       ///< compile time avoided by hits
  store_errors,   ///< failed writes to a tier
  evicted,        ///< entries evicted by the size limit (backend "all")
  evicted_bytes,  ///< their stored bytes (backend "all")
  dead_tiers,     ///< tiers that failed and were skipped for the rest of the process ("all")
  handed_over,    ///< misses whose binary was handed to a detached process to store
  tuned,          ///< problems tuned and recorded (backend "tuning"; see jitcache/tuning.hpp)
  remote_writes,  ///< entries written to a remote tier
  remote_refused, ///< remote entries refused for their signature (unsigned, another key, ...)
  remote_down,    ///< times a remote tier failed and was left alone for its back-off ("all")
  /// Misses built again over the runtime's own cache, warm from another process's compile of
  /// the same program whose store was handed over and is still pending (OpenCL on PoCL,
  /// JITCACHE_OPENCL_STORE=detach): not counted in `compiles`, which are real compiles.
  warm_builds,
};

/// The stored and printed name of `counter` ("misses", "compile_errors", ...).
JITCACHE_EXPORT const char* to_string(Counter counter) noexcept;

/// The prefix of a per-tier hit counter's name: "hits." + the tier's name ("hits.user").
inline constexpr const char* k_hits_prefix = "hits.";

/// Counters per backend: by_backend[backend][name] = value. Missing counters read as 0.
struct JITCACHE_EXPORT Stats {
  std::map<std::string, std::map<std::string, std::uint64_t>> by_backend;

  /// The value of `counter` for `backend`, 0 if never counted.
  std::uint64_t get(const std::string& backend, Counter counter) const;
  /// Hits of `backend` served by the tier named `tier` ("memory", "user", ...).
  std::uint64_t hits(const std::string& backend, const std::string& tier) const;
  /// Hits of `backend`, every tier.
  std::uint64_t hits(const std::string& backend) const;
  /// Adds `amount` to `counter` of `backend`.
  void add(const std::string& backend, Counter counter, std::uint64_t amount = 1);
  /// Adds `amount` to the hits of `backend` served by tier `tier`.
  void add_hits(const std::string& backend, const std::string& tier, std::uint64_t amount = 1);
  /// Adds every counter of `other` into this.
  void merge(const Stats& other);
};

} // namespace jitcache
