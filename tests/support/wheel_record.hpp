#pragma once
// Lines of a wheel's RECORD as pip writes them (path, "sha256=" and the URL-safe base64 of the
// digest without padding, size), made independently of the code under test's encoder.

#include "core/key/sha256.hpp"

#include <cstdint>
#include <string>

namespace jitcache::test {

/// pip's digest of `content`.
inline std::string pip_digest(const std::string& content) {
  detail::Sha256 sha;
  sha.update(content);
  const Digest d = sha.finish();
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  for (std::size_t i = 0; i < d.bytes.size(); i += 3) {
    std::uint32_t v = std::uint32_t(d.bytes[i]) << 16;
    if (i + 1 < d.bytes.size())
      v |= std::uint32_t(d.bytes[i + 1]) << 8;
    if (i + 2 < d.bytes.size())
      v |= d.bytes[i + 2];
    const std::size_t chars = i + 2 < d.bytes.size() ? 4 : i + 1 < d.bytes.size() ? 3 : 2;
    for (std::size_t c = 0; c < chars; ++c)
      out += k[(v >> (18 - 6 * c)) & 63];
  }
  return "sha256=" + out;
}

/// RECORD's line for the file `entry` holding `content`.
inline std::string record_line(const std::string& entry, const std::string& content) {
  return entry + "," + pip_digest(content) + "," + std::to_string(content.size()) + "\n";
}

} // namespace jitcache::test
