#include "core/engine/request_hash.hpp"

#include "core/support/xxh3.hpp"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace jitcache::detail {

namespace {

static_assert(sizeof(XXH3_state_t) <= 576 && alignof(XXH3_state_t) <= 64,
              "RequestHasher::m_state must hold an XXH3_state_t");

XXH3_state_t* state_of(unsigned char* storage) {
  return reinterpret_cast<XXH3_state_t*>(storage);
}

} // namespace

RequestHasher::RequestHasher() {
  XXH3_128bits_reset(state_of(m_state));
}

void RequestHasher::add(std::string_view part) {
  add_count(part.size());
  xxh3_128_update(state_of(m_state), part.data(), part.size());
}

void RequestHasher::add_count(std::size_t count) {
  const std::uint64_t n = count;
  xxh3_128_update(state_of(m_state), &n, sizeof n);
}

RequestHash RequestHasher::digest() const {
  const XXH128_hash_t h =
      XXH3_128bits_digest(reinterpret_cast<const XXH3_state_t*>(static_cast<const void*>(m_state)));
  return {h.low64, h.high64};
}

} // namespace jitcache::detail
