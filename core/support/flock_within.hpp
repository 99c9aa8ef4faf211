#pragma once

#include "core/support/fork_guard.hpp"

#include <chrono>

namespace jitcache::detail {

/// flock(2) `operation` (LOCK_SH or LOCK_EX) on `fd`, tried without blocking and again after
/// pauses (1 ms, doubling up to 50 ms) until `wait` has passed: a wait that is always bounded,
/// where a blocking flock waits for as long as a stopped process holds the lock. Returns
/// whether the lock is held (errno says why not).
bool flock_within(int fd, int operation, std::chrono::milliseconds wait);

/// Lets go of the flock taken on `fd` in fork generation `taken_in` (LOCK_UN), then closes `fd`.
/// A flock belongs to the open file description, which a child forked meanwhile shares through
/// its copy of the descriptor: a close alone would leave the lock held for as long as the child
/// lives. In another generation (a child dropping its copy of a parent's descriptor) `fd` is
/// only closed: the lock is the parent's to let go. Never fails (errno is kept).
void unlock_and_close(int fd, unsigned taken_in = fork_generation());

} // namespace jitcache::detail
