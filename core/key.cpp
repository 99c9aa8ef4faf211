#include <jitcache/key.hpp>
#include <jitcache/version.hpp>

#include <openssl/evp.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace jitcache {

const char* to_string(KeySection section) noexcept {
  switch (section) {
  case KeySection::schema: return "schema";
  case KeySection::backend: return "backend";
  case KeySection::device: return "device";
  case KeySection::toolchain: return "toolchain";
  case KeySection::options: return "options";
  case KeySection::source: return "source";
  case KeySection::header: return "header";
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
KeyBuilder& KeyBuilder::header(std::string_view name, std::string_view content) {
  return add(KeySection::header, name, content);
}

KeyBuilder& KeyBuilder::add(KeySection section, std::string_view name, std::string_view value) {
  m_fields.push_back({section, std::string(name), std::string(value)});
  return *this;
}

namespace {
void update_length(EVP_MD_CTX* ctx, std::uint64_t n) {
  unsigned char le[8];
  for (int i = 0; i < 8; ++i)
    le[i] = static_cast<unsigned char>(n >> (8 * i));
  EVP_DigestUpdate(ctx, le, sizeof le);
}
} // namespace

Key KeyBuilder::finish() const {
  Key key;
  key.backend = m_backend;
  key.fields = m_fields;
  std::stable_sort(key.fields.begin(), key.fields.end(),
                   [](const KeyField& a, const KeyField& b) { return a.section < b.section; });
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("jitcache: OpenSSL SHA-256 unavailable");
  for (const KeyField& f : key.fields) {
    const auto tag = static_cast<unsigned char>(f.section);
    EVP_DigestUpdate(ctx.get(), &tag, 1);
    update_length(ctx.get(), f.name.size());
    EVP_DigestUpdate(ctx.get(), f.name.data(), f.name.size());
    update_length(ctx.get(), f.value.size());
    EVP_DigestUpdate(ctx.get(), f.value.data(), f.value.size());
  }
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), key.digest.bytes.data(), &len);
  return key;
}

} // namespace jitcache
