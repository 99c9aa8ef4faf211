#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jitcache::detail {

// Little-endian integers and length-prefixed byte strings: the stored formats (entries, key
// fields, records) are the same on every machine.

/// Writes `value` little-endian at `at` (sizeof(T) bytes must be there).
template <typename T> void store_le(char* at, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    at[i] = static_cast<char>(static_cast<std::uint64_t>(value) >> (8 * i));
}
/// Reads a little-endian T at `at` (sizeof(T) bytes must be there).
template <typename T> T load_le(const char* at) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(at[i])) << (8 * i);
  return static_cast<T>(value);
}
/// Appends `value` little-endian.
template <typename T> void append_le(std::string& out, T value) {
  char bytes[sizeof(T)];
  store_le(bytes, value);
  out.append(bytes, sizeof bytes);
}
/// Consumes a little-endian T from the front of `in`; false when `in` is too short.
template <typename T> bool take_le(std::string_view& in, T& value) {
  if (in.size() < sizeof(T))
    return false;
  value = load_le<T>(in.data());
  in.remove_prefix(sizeof(T));
  return true;
}
/// Appends `bytes` after its length as a little-endian L.
template <typename L = std::uint64_t> void append_sized(std::string& out, std::string_view bytes) {
  append_le(out, static_cast<L>(bytes.size()));
  out.append(bytes);
}
/// Consumes what append_sized<L> wrote into `bytes` (a std::string, or a std::string_view into
/// `in`); false when `in` is malformed.
template <typename L = std::uint64_t, typename Bytes>
bool take_sized(std::string_view& in, Bytes& bytes) {
  L size = 0;
  if (!take_le(in, size) || size > in.size())
    return false;
  bytes = Bytes(in.substr(0, static_cast<std::size_t>(size)));
  in.remove_prefix(static_cast<std::size_t>(size));
  return true;
}

/// Appends `text` as "<decimal length>:<bytes>": a field of readable text metadata in which any
/// byte may appear.
inline void append_counted(std::string& out, std::string_view text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
}

/// Consumes what append_counted wrote from the front of `in`; nullopt when it is malformed.
inline std::optional<std::string> take_counted(std::string_view& in) {
  std::size_t size = 0;
  const auto [end, ec] = std::from_chars(in.data(), in.data() + in.size(), size);
  const auto digits = static_cast<std::size_t>(end - in.data());
  if (ec != std::errc() || digits == 0 || digits >= in.size() || in[digits] != ':' ||
      in.size() - digits - 1 < size)
    return std::nullopt;
  std::string value(in.substr(digits + 1, size));
  in.remove_prefix(digits + 1 + size);
  return value;
}

/// Consumes `prefix` from the front of `in` when `in` starts with it; false (and `in` unchanged)
/// when it does not.
inline bool take_prefix(std::string_view& in, std::string_view prefix) {
  if (in.substr(0, prefix.size()) != prefix)
    return false;
  in.remove_prefix(prefix.size());
  return true;
}

} // namespace jitcache::detail
