// OpenSSL 3 deprecates the direct digest functions in favour of EVP; see sha256.hpp for why
// they are used here. They remain part of OpenSSL 3's API.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "core/key/sha256.hpp"

#include <openssl/sha.h>

namespace jitcache::detail {

struct Sha256::State {
  SHA256_CTX ctx;
};

Sha256::Sha256() : m_state(std::make_unique<State>()) {
  SHA256_Init(&m_state->ctx);
}
Sha256::~Sha256() = default;

void Sha256::update(std::string_view data) {
  SHA256_Update(&m_state->ctx, data.data(), data.size());
}

Digest Sha256::finish() {
  Digest d;
  SHA256_Final(d.bytes.data(), &m_state->ctx);
  return d;
}

} // namespace jitcache::detail
