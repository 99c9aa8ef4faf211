#pragma once
// Who holds a POSIX lock on one byte of a file, as another process sees it (LMDB's lock file:
// byte 0 shared while a process has the environment open, the byte at a process's id while its
// reader slots are live).

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <utility>

namespace jitcache::test {

/// The lock that would stop this process from taking a lock of `type` (F_RDLCK or F_WRLCK) on
/// the byte at `at` of `file`: its type and its holder's pid; {F_UNLCK, 0} when none would,
/// {-1, 0} when the file cannot be opened. Call it from a process that holds no lock on `file`:
/// the descriptor it opens and closes would drop them.
inline std::pair<int, pid_t> lock_holder(const std::filesystem::path& file, short type, off_t at) {
  const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return {-1, 0};
  struct flock probe {};
  probe.l_type = type;
  probe.l_whence = SEEK_SET;
  probe.l_start = at;
  probe.l_len = 1;
  const bool asked = ::fcntl(fd, F_GETLK, &probe) == 0;
  ::close(fd);
  if (!asked)
    return {-1, 0};
  return {probe.l_type, probe.l_type == F_UNLCK ? 0 : probe.l_pid};
}

} // namespace jitcache::test
