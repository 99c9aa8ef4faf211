#include "core/support/flock_within.hpp"

#include "core/support/clock.hpp"

#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace jitcache::detail {

bool flock_within(int fd, int operation, std::chrono::milliseconds wait) {
  Clock& clock = detail::clock();
  const auto deadline = clock.steady() + wait;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (::flock(fd, operation | LOCK_NB) == 0)
      return true;
    if (errno != EWOULDBLOCK && errno != EINTR)
      return false;
    if (clock.steady() >= deadline)
      return false;
    clock.sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

void unlock_and_close(int fd, unsigned taken_in) {
  const int error = errno;
  if (taken_in == fork_generation())
    ::flock(fd, LOCK_UN);
  ::close(fd);
  errno = error;
}

} // namespace jitcache::detail
