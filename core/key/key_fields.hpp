#pragma once

#include <jitcache/key.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::detail {

/// Encodes `fields` compactly for storing with an entry (Entry::key_fields, Key::stored_fields):
/// values up to 128 bytes as they are, longer ones as "sha256:<hex>" (sources and headers), so
/// two encodings are equal exactly when the fields are. Part of the entry format: changing it
/// needs a k_format_version bump.
std::string encode_key_fields(const std::vector<KeyField>& fields);

/// Decodes encode_key_fields() output; std::nullopt when `bytes` is malformed.
std::optional<std::vector<KeyField>> decode_key_fields(std::string_view bytes);

} // namespace jitcache::detail
