#include <jitcache/digest.hpp>

#include "core/key/sha256.hpp"

namespace jitcache {

std::string Digest::hex() const {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = k_hex[bytes[i] >> 4];
    out[2 * i + 1] = k_hex[bytes[i] & 0xf];
  }
  return out;
}

std::optional<Digest> Digest::from_hex(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  };
  Digest d;
  if (hex.size() != d.bytes.size() * 2)
    return std::nullopt;
  for (std::size_t i = 0; i < d.bytes.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return std::nullopt;
    d.bytes[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return d;
}

Digest Digest::of(std::string_view data) {
  detail::Sha256 sha;
  sha.update(data);
  return sha.finish();
}

} // namespace jitcache
