#include <jitcache/key.hpp>
#include <jitcache/version.hpp>

#include "core/key/key_fields.hpp"
#include "core/key/sha256.hpp"
#include "core/support/byte_io.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace jitcache {

const char* to_string(KeySection section) noexcept {
  switch (section) {
  case KeySection::schema:
    return "schema";
  case KeySection::backend:
    return "backend";
  case KeySection::device:
    return "device";
  case KeySection::toolchain:
    return "toolchain";
  case KeySection::options:
    return "options";
  case KeySection::source:
    return "source";
  case KeySection::header:
    return "header";
  }
  return "unknown";
}

KeyBuilder::KeyBuilder(std::string_view backend) : m_backend(backend) {
  add(KeySection::schema, "key_schema", std::to_string(k_key_schema_version));
  add(KeySection::backend, "backend", backend);
}

KeyBuilder& KeyBuilder::device(std::string_view name, std::string_view value) {
  return add(KeySection::device, name, value);
}
KeyBuilder& KeyBuilder::toolchain(std::string_view name, std::string_view value) {
  return add(KeySection::toolchain, name, value);
}
KeyBuilder& KeyBuilder::options(std::string_view options) {
  return add(KeySection::options, "options", options);
}
KeyBuilder& KeyBuilder::source(std::string_view source, std::string_view name) {
  return add(KeySection::source, name, source);
}
KeyBuilder& KeyBuilder::header(std::string_view name, std::string_view content,
                               std::string_view resolved_path) {
  return add(KeySection::header, name, content, resolved_path);
}

KeyBuilder& KeyBuilder::stored_header(std::string_view name, std::string_view stored,
                                      std::string_view resolved_path) {
  return add(KeySection::header, name, stored, resolved_path);
}

KeyBuilder& KeyBuilder::reserve(std::size_t fields) {
  m_fields.reserve(m_fields.size() + fields);
  return *this;
}

KeyBuilder& KeyBuilder::add(KeySection section, std::string_view name, std::string_view value,
                            std::string_view detail) {
  m_fields.push_back({section, std::string(name), std::string(value), std::string(detail)});
  return *this;
}

namespace {
void update_length(detail::Sha256& sha, std::uint64_t n) {
  char le[8];
  detail::store_le(le, n);
  sha.update({le, sizeof le});
}
} // namespace

Key KeyBuilder::finish() const& {
  return KeyBuilder(*this).finish_fields();
}

Key KeyBuilder::finish() && {
  return finish_fields();
}

Key KeyBuilder::finish_fields() {
  Key key;
  key.backend = m_backend;
  // By section, each in the order added: a counting sort, each field moved once (a thousand
  // headers in a CuPy kernel's key).
  std::array<std::size_t, 257> at{};
  std::size_t bytes = 0;
  for (const KeyField& f : m_fields) {
    ++at[static_cast<std::uint8_t>(f.section) + 1];
    const std::size_t value = f.value.size() <= detail::k_inline_value_limit
                                  ? f.value.size()
                                  : detail::k_digest_value_size;
    bytes += 1 + 4 + f.name.size() + 4 + value;
  }
  for (std::size_t i = 1; i < at.size(); ++i)
    at[i] += at[i - 1];
  key.fields.resize(m_fields.size());
  for (KeyField& f : m_fields)
    key.fields[at[static_cast<std::uint8_t>(f.section)]++] = std::move(f);
  m_fields.clear();
  key.stored_fields.reserve(bytes);
  // Each value is hashed as it is stored (schema 2): a long one by its own SHA-256, which a
  // process finds again for a header every kernel includes instead of hashing its bytes again.
  detail::Sha256 sha;
  std::string buffer;
  for (const KeyField& f : key.fields) {
    const std::string_view value = detail::stored_value(f.value, buffer);
    const char tag = static_cast<char>(f.section);
    sha.update({&tag, 1});
    update_length(sha, f.name.size());
    sha.update(f.name);
    update_length(sha, value.size());
    sha.update(value);
    detail::append_stored_field(key.stored_fields, f, value);
  }
  key.digest = sha.finish();
  return key;
}

} // namespace jitcache
