#pragma once

#include "core/key/dependencies.hpp"
#include "core/support/fork_safe_mutex.hpp"

#include <jitcache/digest.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace jitcache::detail {

/// The names of a manifest's parts (see Record in manifest.hpp): its guards' and its paths'.
struct PartNames {
  Digest guards, paths;
};

/// The manifests' parts this process has made or read, so that the kernels built from one scan
/// after the first neither hash nor read them again: CuPy's 51 kernels share 4 scans, whose
/// guards and paths are some 50 KB each. A part's name is the digest of its bytes, so what is
/// known of it holds for every Cache and user tier of the process. Bounded: past k_known scans
/// or parts, each map is forgotten. Thread-safe.
class KnownParts {
public:
  /// The process's (never destroyed: used during exit).
  static KnownParts& process();

  /// The part names of the manifests built from `scan` (Dependencies::vouched), when known.
  std::optional<PartNames> names(const Dependencies::Vouched* scan);
  /// Notes the part names of `scan`'s manifests, and its guards as the bytes of `names.guards`.
  /// `scan` is held while noted, so that no other scan comes to have its address.
  void add_names(const std::shared_ptr<const Dependencies::Vouched>& scan, const PartNames& names);

  /// The bytes of the part named `name`, when known; nullptr otherwise.
  std::shared_ptr<const std::string> bytes(const Digest& name);
  /// Notes `bytes` as those of the part named `name` (read intact from a user tier).
  void add_bytes(const Digest& name, std::shared_ptr<const std::string> bytes);

  /// Forgets everything, as a new process starts (tests).
  void forget();

  static constexpr std::size_t k_known = 64;

private:
  ForkSafeMutex m_mutex;
  std::unordered_map<const Dependencies::Vouched*,
                     std::pair<std::shared_ptr<const Dependencies::Vouched>, PartNames>>
      m_names;
  std::unordered_map<Digest, std::shared_ptr<const std::string>> m_bytes;
};

} // namespace jitcache::detail
