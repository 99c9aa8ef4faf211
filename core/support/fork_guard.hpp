#pragma once

namespace jitcache::detail {

/// How many fork()s separate this process from the one that started the program: 0 in the
/// original process, bumped in every child (pthread_atfork). An object that owns something a
/// child must neither use nor release (an LMDB environment, a compile lease's lock) records the
/// generation it was made in and compares it before use. Never fails; thread-safe.
unsigned fork_generation() noexcept;

} // namespace jitcache::detail
