#include "core/tiers/entry_codec.hpp"

#include "core/support/byte_io.hpp"

#include <jitcache/version.hpp>

// Verifying an entry reads all of it, and that checksum is most of a package lookup: the fastest
// XXH3 that pays for itself (core/support/xxh3.hpp).
#include "core/support/xxh3.hpp"

#include <cstring>

namespace jitcache::detail {

namespace {

constexpr char k_magic[4] = {'J', 'I', 'T', 'C'};
constexpr std::size_t k_checksum_offset = 8;
constexpr std::size_t k_checked_offset = 16; // the checksum covers everything from here on

template <typename T> void put_le(std::string& out, std::size_t at, T value) {
  detail::store_le(out.data() + at, value);
}
template <typename T> T get_le(std::string_view in, std::size_t at) {
  return detail::load_le<T>(in.data() + at);
}

struct Layout {
  std::uint32_t backend_len, metadata_len;
  std::uint64_t payload_len, compile_ns;
  std::uint32_t fields_len;
};

Error corrupt(const std::string& why) {
  return Error(ErrorCode::corrupt, "stored entry " + why);
}

// Checks everything but the payload copy; on success fills `layout`.
Expected<Layout> check(const Digest& key, std::string_view bytes) {
  if (bytes.size() < k_entry_header_size)
    return corrupt("truncated (" + std::to_string(bytes.size()) + " bytes)");
  if (std::memcmp(bytes.data(), k_magic, sizeof k_magic) != 0)
    return corrupt("has a bad magic number");
  const auto version = get_le<std::uint32_t>(bytes, 4);
  if (version != static_cast<std::uint32_t>(k_format_version))
    return corrupt("has format version " + std::to_string(version));
  const auto checksum = get_le<std::uint64_t>(bytes, k_checksum_offset);
  if (xxh3_64(bytes.data() + k_checked_offset, bytes.size() - k_checked_offset) != checksum)
    return corrupt("fails its checksum");
  if (std::memcmp(bytes.data() + 16, key.bytes.data(), key.bytes.size()) != 0)
    return corrupt("was stored under a different key");
  Layout l{get_le<std::uint32_t>(bytes, 48), get_le<std::uint32_t>(bytes, 52),
           get_le<std::uint64_t>(bytes, 56), get_le<std::uint64_t>(bytes, 64),
           get_le<std::uint32_t>(bytes, 72)};
  const std::uint64_t body =
      std::uint64_t(l.backend_len) + l.metadata_len + l.fields_len + l.payload_len;
  if (l.payload_len > bytes.size() || body != bytes.size() - k_entry_header_size)
    return corrupt("has inconsistent lengths");
  return l;
}

} // namespace

std::string encode_entry(const Digest& key, const Entry& entry) {
  std::string out(k_entry_header_size, '\0');
  std::memcpy(out.data(), k_magic, sizeof k_magic);
  put_le<std::uint32_t>(out, 4, k_format_version);
  std::memcpy(out.data() + 16, key.bytes.data(), key.bytes.size());
  put_le<std::uint32_t>(out, 48, static_cast<std::uint32_t>(entry.backend.size()));
  put_le<std::uint32_t>(out, 52, static_cast<std::uint32_t>(entry.metadata.size()));
  put_le<std::uint64_t>(out, 56, entry.payload.size());
  put_le<std::uint64_t>(out, 64, entry.compile_ns);
  put_le<std::uint32_t>(out, 72, static_cast<std::uint32_t>(entry.key_fields.size()));
  out.reserve(out.size() + entry.backend.size() + entry.metadata.size() + entry.key_fields.size() +
              entry.payload.size());
  out += entry.backend;
  out += entry.metadata;
  out += entry.key_fields;
  out += entry.payload;
  put_le<std::uint64_t>(out, k_checksum_offset,
                        xxh3_64(out.data() + k_checked_offset, out.size() - k_checked_offset));
  return out;
}

Expected<EntryView> view_entry(const Digest& key, std::string_view bytes) {
  auto layout = check(key, bytes);
  if (!layout)
    return std::move(layout).error();
  EntryView view;
  std::size_t at = k_entry_header_size;
  const auto take = [&](std::string_view& part, std::uint64_t size) {
    part = bytes.substr(at, size);
    at += size;
  };
  take(view.backend, layout->backend_len);
  take(view.metadata, layout->metadata_len);
  take(view.key_fields, layout->fields_len);
  take(view.payload, layout->payload_len);
  view.compile_ns = layout->compile_ns;
  return view;
}

Entry to_entry(const EntryView& view) {
  Entry entry(std::string(view.backend), std::string(view.payload), std::string(view.metadata),
              view.compile_ns);
  entry.key_fields = view.key_fields;
  return entry;
}

Expected<Entry> decode_entry(const Digest& key, std::string_view bytes) {
  auto view = view_entry(key, bytes);
  if (!view)
    return std::move(view).error();
  return to_entry(*view);
}

Expected<std::string> verify_entry(const Digest& key, std::string_view bytes) {
  auto view = view_entry(key, bytes);
  if (!view)
    return std::move(view).error();
  return std::string(view->backend);
}

} // namespace jitcache::detail
