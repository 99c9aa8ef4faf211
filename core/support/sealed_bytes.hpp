#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace jitcache::detail {

// A stored value framed by a magic and the XXH3-64 of what follows it (records, portable
// manifests): damage anywhere is found before a byte of it is parsed.

/// `magic`, the XXH3-64 of `body` (little-endian), then `body`.
std::string seal(std::string_view magic, std::string_view body);
/// The body of what seal() made with `magic`; nullopt for another magic, bytes too short, or a
/// checksum that does not match. A view into `bytes`.
std::optional<std::string_view> unseal(std::string_view magic, std::string_view bytes);

} // namespace jitcache::detail
