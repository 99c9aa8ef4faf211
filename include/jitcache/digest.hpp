#pragma once

#include <jitcache/export.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace jitcache {

/// A SHA-256 digest: the identity of a cache entry. Value type, totally ordered, hashable.
struct JITCACHE_EXPORT Digest {
  std::array<std::uint8_t, 32> bytes{};

  /// Lowercase hex form, 64 characters.
  std::string hex() const;

  /// Parses a 64-character hex string (either case); std::nullopt on any other input.
  static std::optional<Digest> from_hex(std::string_view hex);

  /// SHA-256 of `data`.
  static Digest of(std::string_view data);

  friend bool operator==(const Digest& a, const Digest& b) { return a.bytes == b.bytes; }
  friend bool operator!=(const Digest& a, const Digest& b) { return a.bytes != b.bytes; }
  friend bool operator<(const Digest& a, const Digest& b) { return a.bytes < b.bytes; }
};

} // namespace jitcache

template <> struct std::hash<jitcache::Digest> {
  std::size_t operator()(const jitcache::Digest& d) const noexcept {
    std::size_t h;
    static_assert(sizeof(h) <= sizeof(d.bytes));
    __builtin_memcpy(&h, d.bytes.data(), sizeof(h)); // already uniformly distributed
    return h;
  }
};
