#pragma once

#include "core/tiers/user/cache_dir.hpp"

#include <jitcache/expected.hpp>

#include <memory>

namespace jitcache::detail {

/// One of a host's compile slots (JITCACHE_MAX_COMPILES, default the number of cores), held
/// while compiling, so that a cold start of 64 ranks on one node queues its compiles instead of
/// running 64 compilers at once (out of memory). A semaphore across the processes sharing a user
/// tier (the node's): the file `<dir>/compile-slots`, one byte per slot locked with an
/// open-file-description lock (F_OFD_SETLK). The kernel drops a lock when its holder dies, so a
/// killed holder never keeps a slot.
class CompileSlot {
public:
  /// Waits until one of `count` slots (at least 1) is free, and takes it. Errors: io_error when
  /// the file cannot be made in `dir` (the caller then compiles without a slot).
  static Expected<std::unique_ptr<CompileSlot>> acquire(const CacheDir& dir, unsigned count);
  /// Takes a free slot, or returns null at once when all `count` are held. Errors: as acquire().
  static Expected<std::unique_ptr<CompileSlot>> try_acquire(const CacheDir& dir, unsigned count);
  /// The number of slots when `configured` is 0: the number of cores, found once per process.
  static unsigned default_count(unsigned configured);

  /// Lets go of the slot.
  ~CompileSlot();
  CompileSlot(const CompileSlot&) = delete;
  CompileSlot& operator=(const CompileSlot&) = delete;

  /// Which slot this is (0 <= index < count).
  unsigned index() const { return m_index; }

private:
  CompileSlot(int fd, unsigned index) : m_fd(fd), m_index(index) {}

  int m_fd;
  unsigned m_index;
};

} // namespace jitcache::detail
