#include "core/tuning/measuring_lock.hpp"

#include "core/support/flock_within.hpp"
#include "core/support/fork_guard.hpp"
#include "core/tuning/tuning_record.hpp"

#include <cerrno>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace jitcache::detail {

namespace {

std::mutex g_measuring;

} // namespace

MeasuringLock::MeasuringLock(const std::optional<CacheDir>& leases, const tuning::Device& device) {
  if (leases) {
    const std::string name =
        "measure-" + Digest::of(tuning::device_fields(device)).hex().substr(0, 32);
    if (auto fd = leases->open_file(name, O_RDWR | O_CREAT)) {
      int rc;
      while ((rc = ::flock(*fd, LOCK_EX)) != 0 && errno == EINTR) {
      }
      if (rc == 0) {
        m_fd = *fd;
        m_generation = fork_generation();
        return;
      }
      ::close(*fd); // no flock here (ENOLCK): the mutex at least
    }
  }
  m_held = std::unique_lock<std::mutex>(g_measuring);
}

MeasuringLock::~MeasuringLock() {
  if (m_fd >= 0)
    unlock_and_close(m_fd, m_generation); // in a forked child: closed only
}

} // namespace jitcache::detail
