#include "core/engine/compile_slot.hpp"

#include "core/support/clock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace jitcache::detail {

namespace {

constexpr const char* k_file = "compile-slots";

// Locks (F_WRLCK) or unlocks (F_UNLCK) byte `index`; false when another holder has it.
bool lock(int fd, short type, unsigned index) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(index);
  fl.l_len = 1;
  return ::fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

} // namespace

unsigned CompileSlot::default_count(unsigned configured) {
  if (configured > 0)
    return configured;
  // Once per process: hardware_concurrency() opens and reads a sysfs file each time it is asked,
  // and it was asked for every miss (2% of an NVRTC front-end's miss).
  static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return cores;
}

Expected<std::unique_ptr<CompileSlot>> CompileSlot::try_acquire(const CacheDir& dir,
                                                                unsigned count) {
  auto fd = dir.open_file(k_file, O_RDWR | O_CREAT);
  if (!fd)
    return std::move(fd).error();
  count = std::max(1u, count);
  // Start at a slot of this process's own, so that processes starting together do not all
  // try slot 0 first.
  const unsigned first = static_cast<unsigned>(::getpid()) % count;
  for (unsigned i = 0; i < count; ++i) {
    const unsigned index = (first + i) % count;
    if (lock(*fd, F_WRLCK, index))
      return std::unique_ptr<CompileSlot>(new CompileSlot(*fd, index));
  }
  ::close(*fd);
  return std::unique_ptr<CompileSlot>();
}

Expected<std::unique_ptr<CompileSlot>> CompileSlot::acquire(const CacheDir& dir, unsigned count) {
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    auto slot = try_acquire(dir, count);
    if (!slot || *slot)
      return slot;
    clock().sleep_for(pause); // a compile takes a second or more: a short pause is no cost
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

CompileSlot::~CompileSlot() {
  lock(m_fd, F_UNLCK, m_index);
  ::close(m_fd);
}

} // namespace jitcache::detail
