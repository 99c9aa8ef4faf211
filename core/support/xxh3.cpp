#include "core/support/xxh3.hpp"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#ifdef JITCACHE_HAVE_XXH_DISPATCH
// Only the shared libxxhash has the dispatching entry points; Debian's static archive does not
// (see core/CMakeLists). The default names stay the library's own SSE2 code.
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
#endif

#include <atomic>

namespace jitcache::detail {

namespace {

#ifdef JITCACHE_HAVE_XXH_DISPATCH
std::atomic<bool> g_dispatched{false};       // the CPU's features have been tested
std::atomic<std::size_t> g_default_bytes{0}; // hashed by the default code until then

// Whether `size` bytes go to the dispatching code.
bool dispatch(std::size_t size) {
  if (g_dispatched.load(std::memory_order_relaxed))
    return true;
  if (size < k_worth_dispatching &&
      g_default_bytes.fetch_add(size, std::memory_order_relaxed) + size < k_worth_dispatching)
    return false;
  g_dispatched.store(true, std::memory_order_relaxed);
  return true;
}
#endif

} // namespace

std::uint64_t xxh3_64(const void* data, std::size_t size) {
#ifdef JITCACHE_HAVE_XXH_DISPATCH
  if (dispatch(size))
    return XXH3_64bits_dispatch(data, size);
#endif
  return XXH3_64bits(data, size);
}

void xxh3_128_update(void* state, const void* data, std::size_t size) {
  auto* s = static_cast<XXH3_state_t*>(state);
#ifdef JITCACHE_HAVE_XXH_DISPATCH
  if (dispatch(size)) {
    XXH3_128bits_update_dispatch(s, data, size);
    return;
  }
#endif
  XXH3_128bits_update(s, data, size);
}

} // namespace jitcache::detail
