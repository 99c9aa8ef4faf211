#include "core/tiers/remote/remote_seal.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>

namespace jitcache::detail {

namespace {

constexpr std::string_view k_magic = "JCR1";
constexpr std::size_t k_mac_size = 32;
static_assert(k_magic.size() + 1 + k_mac_size == k_seal_overhead);
enum : char { k_unsigned = 0, k_signed = 1 };

std::array<unsigned char, k_mac_size> mac(const Digest& key, std::string_view entry_bytes,
                                          std::string_view hmac_key) {
  std::array<unsigned char, k_mac_size> out{};
  // Fetched once: a fetch looks the algorithm up in OpenSSL's provider tables.
  static EVP_MAC* const algorithm = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* context = algorithm ? EVP_MAC_CTX_new(algorithm) : nullptr;
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest_name, 0),
                               OSSL_PARAM_construct_end()};
  std::size_t length = 0;
  const bool ok =
      context &&
      EVP_MAC_init(context, reinterpret_cast<const unsigned char*>(hmac_key.data()),
                   hmac_key.size(), params) == 1 &&
      EVP_MAC_update(context, key.bytes.data(), key.bytes.size()) == 1 &&
      EVP_MAC_update(context, reinterpret_cast<const unsigned char*>(entry_bytes.data()),
                     entry_bytes.size()) == 1 &&
      EVP_MAC_final(context, out.data(), &length, out.size()) == 1 && length == k_mac_size;
  EVP_MAC_CTX_free(context);
  if (!ok)
    out.fill(0); // never matches a real MAC by chance: a value is refused, not trusted
  return out;
}

} // namespace

std::string seal(const Digest& key, std::string_view entry_bytes, std::string_view hmac_key) {
  std::string value(k_magic);
  value += hmac_key.empty() ? k_unsigned : k_signed;
  if (!hmac_key.empty()) {
    const auto signature = mac(key, entry_bytes, hmac_key);
    value.append(reinterpret_cast<const char*>(signature.data()), signature.size());
  }
  value.append(entry_bytes);
  return value;
}

Unsealed unseal(const Digest& key, std::string_view value, std::string_view hmac_key) {
  Unsealed out;
  if (value.size() < k_magic.size() + 1 || value.substr(0, k_magic.size()) != k_magic) {
    out.why = "not a jitcache remote value (bad magic or too short)";
    return out;
  }
  const char kind = value[k_magic.size()];
  std::string_view rest = value.substr(k_magic.size() + 1);
  if (kind != k_unsigned && kind != k_signed) {
    out.why = "unknown signature kind";
    return out;
  }
  std::string_view signature;
  if (kind == k_signed) {
    if (rest.size() < k_mac_size) {
      out.why = "signed value too short for its signature";
      return out;
    }
    signature = rest.substr(0, k_mac_size);
    rest = rest.substr(k_mac_size);
  }
  if (!hmac_key.empty()) {
    out.status = Unsealed::Status::refused;
    if (kind == k_unsigned) {
      out.why = "unsigned, and JITCACHE_REMOTE_KEY asks for signed entries";
      return out;
    }
    const auto expected = mac(key, rest, hmac_key);
    if (CRYPTO_memcmp(expected.data(), signature.data(), k_mac_size) != 0) {
      out.why = "its signature does not match (another key signed it, its bytes were changed, "
                "or it was stored under another key's name)";
      return out;
    }
  }
  out.status = Unsealed::Status::ok;
  out.entry = rest;
  return out;
}

} // namespace jitcache::detail
