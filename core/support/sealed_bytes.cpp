#include "core/support/sealed_bytes.hpp"

#include "core/support/byte_io.hpp"

#include <xxhash.h>

#include <cstdint>

namespace jitcache::detail {

std::string seal(std::string_view magic, std::string_view body) {
  std::string out(magic);
  append_le<std::uint64_t>(out, XXH3_64bits(body.data(), body.size()));
  out.append(body);
  return out;
}

std::optional<std::string_view> unseal(std::string_view magic, std::string_view bytes) {
  std::uint64_t checksum = 0;
  if (bytes.substr(0, magic.size()) != magic)
    return std::nullopt;
  bytes.remove_prefix(magic.size());
  if (!take_le(bytes, checksum) || XXH3_64bits(bytes.data(), bytes.size()) != checksum)
    return std::nullopt;
  return bytes;
}

} // namespace jitcache::detail
