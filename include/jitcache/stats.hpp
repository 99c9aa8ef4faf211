#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace jitcache {

/// Counter names used in Stats (per backend). "hits.<tier>" counts hits per tier.
namespace counter {
inline constexpr const char* misses = "misses";          ///< lookups no tier could answer
inline constexpr const char* compiles = "compiles";      ///< successful compiles
inline constexpr const char* compile_errors = "compile_errors"; ///< compiles that failed
inline constexpr const char* rejected = "rejected";      ///< stored binaries the runtime refused
inline constexpr const char* corrupt = "corrupt";        ///< stored entries failing verification
inline constexpr const char* bytes_stored = "bytes_stored"; ///< payload bytes written
inline constexpr const char* saved_ns = "saved_ns";      ///< compile time avoided by hits
inline constexpr const char* store_errors = "store_errors"; ///< failed writes to a tier
inline constexpr const char* evicted = "evicted";           ///< entries evicted by the size limit
inline constexpr const char* evicted_bytes = "evicted_bytes"; ///< their stored bytes
inline constexpr const char* hits_prefix = "hits.";      ///< + tier name
} // namespace counter

/// Counters per backend: stats[backend][counter] = value. Missing counters read as 0.
struct Stats {
  std::map<std::string, std::map<std::string, std::uint64_t>> by_backend;

  /// The value of `name` for `backend`, 0 if never counted.
  std::uint64_t get(const std::string& backend, const std::string& name) const;
  /// Sum of every "hits.*" counter of `backend`.
  std::uint64_t hits(const std::string& backend) const;
  /// Adds `amount` to `name` of `backend`.
  void add(const std::string& backend, const std::string& name, std::uint64_t amount = 1);
  /// Adds every counter of `other` into this.
  void merge(const Stats& other);
};

} // namespace jitcache
