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

KeyBuilder& KeyBuilder::headers(std::shared_ptr<const HeaderSet> set) {
  if (set && !set->fields().empty())
    m_sets.push_back(std::move(set));
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

// The section byte a header set is hashed with: no field's section (KeySection ends at header),
// so no field added one by one hashes as a set does.
constexpr auto k_header_set_tag = static_cast<KeySection>(7);

// Hashes one field as a key does: section byte, u64le name length, name, u64le value length and
// the value in its stored form.
void update_field(detail::Sha256& sha, KeySection section, std::string_view name,
                  std::string_view stored) {
  const char tag = static_cast<char>(section);
  sha.update({&tag, 1});
  update_length(sha, name.size());
  sha.update(name);
  update_length(sha, stored.size());
  sha.update(stored);
}

} // namespace

HeaderSet::HeaderSet(std::vector<KeyField> fields) : m_fields(std::move(fields)) {
  detail::Sha256 sha;
  std::string buffer;
  for (KeyField& f : m_fields) {
    f.section = KeySection::header;
    const std::string_view value = detail::stored_value(f.value, buffer);
    update_field(sha, f.section, f.name, value);
    detail::append_stored_field(m_stored, f, value);
  }
  m_digest = sha.finish();
}

std::vector<KeyField> all_fields(const Key& key) {
  std::vector<KeyField> out = key.fields;
  for (const auto& set : key.header_sets)
    out.insert(out.end(), set->fields().begin(), set->fields().end());
  return out;
}

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
  for (const auto& set : m_sets)
    bytes += set->stored().size();
  key.stored_fields.reserve(bytes);
  // Each value is hashed as it is stored: a long one by its own SHA-256, which a process finds
  // again for a header every kernel includes instead of hashing its bytes again.
  detail::Sha256 sha;
  std::string buffer;
  for (const KeyField& f : key.fields) {
    const std::string_view value = detail::stored_value(f.value, buffer);
    update_field(sha, f.section, f.name, value);
    detail::append_stored_field(key.stored_fields, f, value);
  }
  // A header set by its digest (schema 3): its thousand fields were hashed once, when it was made.
  for (const auto& set : m_sets) {
    update_field(sha, k_header_set_tag, "header set", "sha256:" + set->digest().hex());
    key.stored_fields += set->stored();
  }
  key.header_sets = std::move(m_sets);
  m_sets.clear();
  key.digest = sha.finish();
  return key;
}

} // namespace jitcache
