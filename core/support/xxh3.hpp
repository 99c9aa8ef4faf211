#pragma once

#include <cstddef>
#include <cstdint>

namespace jitcache::detail {

// XXH3 with the fastest code that pays for itself. xxHash's dispatching entry points run its
// AVX2 or AVX-512 code where the CPU has them (about 3.5x its default SSE2 code on a 1 MB
// buffer), but their first call tests the CPU's features: about 30 us in a virtual machine,
// where each cpuid traps to the hypervisor. That is more than a fresh process's hit spends
// hashing its request and checking its entry, so buffers below k_worth_dispatching take the
// default code until some larger buffer has paid for the test. Both compute the same hash.

/// The size from which a buffer is hashed by the dispatching code when no call has yet.
inline constexpr std::size_t k_worth_dispatching = std::size_t(256) << 10;

/// XXH3_64bits of the `size` bytes at `data`. Thread-safe.
std::uint64_t xxh3_64(const void* data, std::size_t size);

/// XXH3_128bits_update of `state` (an XXH3_state_t) by the `size` bytes at `data`.
/// Thread-safe for distinct states.
void xxh3_128_update(void* state, const void* data, std::size_t size);

} // namespace jitcache::detail
