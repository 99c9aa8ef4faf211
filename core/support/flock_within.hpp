#pragma once

#include <chrono>

namespace jitcache::detail {

/// flock(2) `operation` (LOCK_SH or LOCK_EX) on `fd`, tried without blocking and again after
/// pauses (1 ms, doubling up to 50 ms) until `wait` has passed: a wait that is always bounded,
/// where a blocking flock waits for as long as a stopped process holds the lock. Returns
/// whether the lock is held (errno says why not).
bool flock_within(int fd, int operation, std::chrono::milliseconds wait);

} // namespace jitcache::detail
