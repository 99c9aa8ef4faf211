#pragma once

#include <cstddef>
#include <cstdint>

namespace jitcache::detail {

// XXH3 with the fastest code that pays for itself. xxHash's dispatching entry points run its
// AVX2 or AVX-512 code where the CPU has them (about 3.5x its default SSE2 code on a 1 MB
// buffer), but their first call tests the CPU's features: about 30 us in a virtual machine,
// where each cpuid traps to the hypervisor. That is more than a fresh process's hit spends
// hashing its request and checking its entry. So a process hashes with the default code until
// the bytes it has hashed (this buffer's included) reach k_worth_dispatching, the point from
// which the faster code has saved about what its test costs, and with the dispatching code
// from then on. Both compute the same hash.

/// The bytes hashed by the default code after which a process takes the dispatching code.
inline constexpr std::size_t k_worth_dispatching = std::size_t(256) << 10;

/// XXH3_64bits of the `size` bytes at `data`. Thread-safe.
std::uint64_t xxh3_64(const void* data, std::size_t size);

/// XXH3_128bits_update of `state` (an XXH3_state_t) by the `size` bytes at `data`.
/// Thread-safe for distinct states.
void xxh3_128_update(void* state, const void* data, std::size_t size);

} // namespace jitcache::detail
