#include "core/key/key_fields.hpp"

#include "core/support/byte_io.hpp"

namespace jitcache::detail {

namespace {
constexpr std::size_t k_inline_value_limit = 128;
} // namespace

std::string encode_key_fields(const std::vector<KeyField>& fields) {
  std::string out;
  for (const KeyField& f : fields) {
    out += static_cast<char>(f.section);
    detail::append_sized<std::uint32_t>(out, f.name);
    const std::string value =
        f.value.size() <= k_inline_value_limit ? f.value : "sha256:" + Digest::of(f.value).hex();
    detail::append_sized<std::uint32_t>(out, value);
  }
  return out;
}

std::optional<std::vector<KeyField>> decode_key_fields(std::string_view in) {
  std::vector<KeyField> fields;
  while (!in.empty()) {
    KeyField f;
    f.section = static_cast<KeySection>(in[0]);
    in.remove_prefix(1);
    if (!detail::take_sized<std::uint32_t>(in, f.name) ||
        !detail::take_sized<std::uint32_t>(in, f.value))
      return std::nullopt;
    fields.push_back(std::move(f));
  }
  return fields;
}

} // namespace jitcache::detail
