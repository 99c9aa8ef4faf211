#pragma once

#include <jitcache/key.hpp>

#include <cstddef>
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

/// The longest value stored (and hashed) as it is; a longer one is stored by its digest.
constexpr std::size_t k_inline_value_limit = 128;
/// The size of "sha256:" and the digest's hex: a longer value's stored form.
constexpr std::size_t k_digest_value_size = 7 + 64;

/// A field's value as encode_key_fields() stores it and a key (schema 2) hashes it: up to 128
/// bytes as it is, a longer one as "sha256:<hex>" of it. A long value seen before in the process
/// (a header every kernel includes) is found again by its bytes rather than hashed again.
std::string stored_value(std::string_view value);
/// The same without a copy of a value that is its own stored form (up to 128 bytes): a view of
/// `value`, else of `buffer`, which holds the digest's form.
std::string_view stored_value(std::string_view value, std::string& buffer);

/// Appends `field` to `out` in encode_key_fields()'s form, its value given as `stored`
/// (stored_value(field.value), computed once by a caller that also hashes it).
void append_stored_field(std::string& out, const KeyField& field, std::string_view stored);

/// Decodes encode_key_fields() output; std::nullopt when `bytes` is malformed.
std::optional<std::vector<KeyField>> decode_key_fields(std::string_view bytes);

} // namespace jitcache::detail
