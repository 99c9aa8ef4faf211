#include "core/tiers/user/env_gate.hpp"

#include "core/support/flock_within.hpp"
#include "core/support/fork_guard.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace jitcache::detail {

EnvGate::EnvGate(int fd) : m_fd(fd), m_generation(fork_generation()) {}

EnvGate::EnvGate(EnvGate&& other) noexcept : m_fd(other.m_fd), m_generation(other.m_generation) {
  other.m_fd = -1;
}

EnvGate& EnvGate::operator=(EnvGate&& other) noexcept {
  if (this != &other) {
    let_go();
    m_fd = other.m_fd;
    m_generation = other.m_generation;
    other.m_fd = -1;
  }
  return *this;
}

EnvGate::~EnvGate() {
  let_go();
}

void EnvGate::let_go() {
  if (m_fd < 0)
    return;
  // A close alone would leave the hold with a child forked meanwhile (it shares the open file
  // description): with an exclusive one (a compaction, a clean end), every other process's
  // open would wait for that child to exit.
  unlock_and_close(m_fd, m_generation);
  m_fd = -1;
}

Expected<EnvGate> EnvGate::enter_alone(const CacheDir& dir) {
  auto gate = enter_shared(dir, true, std::chrono::milliseconds(0));
  if (!gate)
    return gate;
  if (!gate->held())
    return Error(ErrorCode::read_only, "the cache directory is read-only");
  if (!gate->try_exclusive(std::chrono::milliseconds(0)))
    return Error(ErrorCode::io_error, "other processes have the user tier open");
  return gate;
}

Expected<EnvGate> EnvGate::enter_shared(const CacheDir& dir, bool create,
                                        std::chrono::milliseconds wait) {
  if (!create && !dir.stat("gate"))
    return EnvGate();
  auto fd = dir.open_file("gate", O_RDONLY | (create ? O_CREAT : 0));
  if (!fd) {
    if (!create && (errno == ENOENT || errno == EACCES))
      return EnvGate(); // gone meanwhile, or not readable: this reader moves no file anyway
    return std::move(fd).error();
  }
  EnvGate gate(*fd);
  if (!flock_within(*fd, LOCK_SH, wait))
    return Error(ErrorCode::io_error, "user tier " + dir.path().string() +
                                          " is being compacted by another process; not waiting "
                                          "longer for it");
  return gate;
}

bool EnvGate::try_exclusive(std::chrono::milliseconds wait) {
  if (m_fd < 0)
    return false;
  if (::flock(m_fd, LOCK_EX | LOCK_NB) == 0)
    return true;
  // A failed conversion may have dropped the shared hold (flock(2)): take it again, or hold
  // nothing and say so through held().
  if (!flock_within(m_fd, LOCK_SH, wait))
    let_go(); // holds nothing now
  return false;
}

void EnvGate::share() {
  if (m_fd >= 0)
    ::flock(m_fd, LOCK_SH);
}

} // namespace jitcache::detail
