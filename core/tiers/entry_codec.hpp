#pragma once

#include <jitcache/digest.hpp>
#include <jitcache/entry.hpp>
#include <jitcache/expected.hpp>

#include <string>
#include <string_view>

namespace jitcache::detail {

/// The stored form of an Entry (DESIGN.md: magic, format version, backend, payload size,
/// checksum), shared by every persistent tier and package format:
///
///   offset 0   "JITC"             magic
///          4   u32le              format version (k_format_version)
///          8   u64le              XXH3-64 of every byte from offset 16 to the end
///         16   32 bytes           the key digest the entry was stored under
///         48   u32le backend len, u32le metadata len, u64le payload len, u64le compile ns,
///              u32le key-fields len, u32le reserved (0)
///         80   backend, metadata, key fields, payload
inline constexpr std::size_t k_entry_header_size = 80;

/// Serialises `entry` stored under `key`.
std::string encode_entry(const Digest& key, const Entry& entry);

/// Parses and verifies bytes read for `key`. Errors (code corrupt) name what failed: short
/// read, bad magic, other format version, checksum mismatch, a different key, bad lengths.
Expected<Entry> decode_entry(const Digest& key, std::string_view bytes);

/// Like decode_entry(), without copying: the views live as long as `bytes`.
Expected<EntryView> view_entry(const Digest& key, std::string_view bytes);

/// An Entry holding copies of `view`'s parts.
Entry to_entry(const EntryView& view);

/// Verifies bytes without copying the payload; returns the backend name.
Expected<std::string> verify_entry(const Digest& key, std::string_view bytes);

} // namespace jitcache::detail
