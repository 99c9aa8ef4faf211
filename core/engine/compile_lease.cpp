#include "core/engine/compile_lease.hpp"

#include "core/support/clock.hpp"
#include "core/support/fork_guard.hpp"
#include "core/support/log.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace jitcache::detail {

namespace {

// The record fills the first bytes of the file; generation g is locked at byte k_lock_base + g
// (locks may lie past the end of a file).
constexpr std::size_t k_record_size = 256;
constexpr off_t k_lock_base = 4096;

bool lock_byte(int fd, short type, std::uint32_t generation) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = k_lock_base + static_cast<off_t>(generation);
  fl.l_len = 1;
  return ::fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

std::int64_t now_ms() {
  return detail::clock().wall_ms();
}

const std::string& host_name() {
  static const std::string name = [] {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0)
      return std::string("unknown");
    return std::string(buf);
  }();
  return name;
}

std::optional<LeaseRecord> read_record(int fd) {
  char buf[k_record_size + 1] = {};
  if (::pread(fd, buf, k_record_size, 0) <= 0)
    return std::nullopt;
  LeaseRecord r;
  char host[k_record_size] = {};
  long long start = 0, expires = 0;
  unsigned generation = 0;
  if (std::sscanf(buf,
                  "jitcache-lease pid=%ld host=%255s start_ms=%lld expires_ms=%lld generation=%u",
                  &r.pid, host, &start, &expires, &generation) != 5)
    return std::nullopt;
  r.host = host;
  r.start_ms = start;
  r.expires_ms = expires;
  r.generation = generation;
  return r;
}

void write_record(int fd, const LeaseRecord& r) {
  char buf[k_record_size];
  std::memset(buf, ' ', sizeof buf);
  const int n = std::snprintf(buf, sizeof buf,
                              "jitcache-lease pid=%ld host=%s start_ms=%lld expires_ms=%lld "
                              "generation=%u",
                              r.pid, r.host.c_str(), static_cast<long long>(r.start_ms),
                              static_cast<long long>(r.expires_ms), r.generation);
  if (n > 0 && static_cast<std::size_t>(n) < sizeof buf)
    buf[n] = ' ';
  buf[sizeof buf - 1] = '\n';
  // One pwrite of a fixed size: a reader sees the old record or the new one.
  if (::pwrite(fd, buf, sizeof buf, 0) != static_cast<ssize_t>(sizeof buf))
    log::debug(std::string("could not write a compile lease record: ") + std::strerror(errno));
}

// Whether `fd` is still the file `name` in `dir` (a holder removes the file when it lets go; a
// waiter that locked the removed file must open the new one).
bool is_linked(int fd, const CacheDir& dir, const std::string& name) {
  struct stat by_fd {};
  const auto by_name = dir.stat(name);
  return ::fstat(fd, &by_fd) == 0 && by_name && by_fd.st_dev == by_name->st_dev &&
         by_fd.st_ino == by_name->st_ino;
}

// Whether the process a record names may still be running. Only a holder on this host can be
// checked; one elsewhere is assumed alive.
bool may_be_alive(const LeaseRecord& r) {
  if (r.host != host_name())
    return true;
  return r.pid > 0 && (::kill(static_cast<pid_t>(r.pid), 0) == 0 || errno == EPERM);
}

std::string describe(const LeaseRecord& r) {
  return "pid " + std::to_string(r.pid) + " on " + r.host;
}

} // namespace

CompileLease::CompileLease(CacheDir dir, std::string name, int fd, std::uint32_t generation)
    : m_dir(std::move(dir)), m_name(std::move(name)), m_fd(fd), m_generation(generation),
      m_fork_generation(fork_generation()) {}

CompileLease::~CompileLease() {
  if (m_fork_generation == fork_generation()) {
    // Remove the file first, so that nobody can lock a file that is about to go. A holder that
    // was taken over from leaves the file to the one who took over.
    const auto record = read_record(m_fd);
    if ((record ? record->generation : 0) == m_generation && is_linked(m_fd, m_dir, m_name))
      m_dir.remove(m_name);
    lock_byte(m_fd, F_UNLCK, m_generation);
  }
  ::close(m_fd);
}

Expected<std::unique_ptr<CompileLease>> CompileLease::acquire(const CacheDir& dir,
                                                              const Digest& key,
                                                              const std::function<bool()>& ready,
                                                              const Options& options) {
  const std::string name = key.hex();
  const std::int64_t waiting_since = now_ms();
  auto pause = std::chrono::milliseconds(1);
  int fd = -1;
  for (;;) {
    if (fd < 0) {
      auto opened = dir.open_file(name, O_RDWR | O_CREAT);
      if (!opened)
        return Error(ErrorCode::io_error, "compile lease: " + opened.error().message);
      fd = *opened;
    }
    if (ready()) {
      ::close(fd);
      return std::unique_ptr<CompileLease>();
    }
    const auto record = read_record(fd);
    const std::uint32_t current = record ? record->generation : 0;
    std::optional<std::uint32_t> won;
    if (lock_byte(fd, F_WRLCK, current)) {
      won = current;
    } else {
      // Someone holds it. Its lease runs out as recorded; but a record not written yet, or left
      // by a process that died (the lock is then a new holder's, about to write its own), counts
      // from when this wait began.
      const std::int64_t expires = record && may_be_alive(*record)
                                       ? record->expires_ms
                                       : waiting_since + options.duration.count();
      if (now_ms() >= expires && lock_byte(fd, F_WRLCK, current + 1))
        won = current + 1;
    }
    if (won) {
      if (!is_linked(fd, dir, name)) { // its holder finished and removed it: look at the new one
        lock_byte(fd, F_UNLCK, *won);
        ::close(fd);
        fd = -1;
        continue;
      }
      std::unique_ptr<CompileLease> lease(new CompileLease(dir, name, fd, *won));
      if (ready())
        return std::unique_ptr<CompileLease>(); // stored just before: let go
      lease->m_taken_from = record;
      const std::int64_t start = now_ms();
      write_record(fd, {static_cast<long>(::getpid()), host_name(), start,
                        start + options.duration.count(), *won});
      if (record && *won != current)
        log::warn("the compile of key " + key.hex().substr(0, 16) + " by " + describe(*record) +
                  " has run past its lease of " +
                  std::to_string((record->expires_ms - record->start_ms) / 1000) +
                  " s; compiling it here too");
      else if (record)
        log::info("the compile of key " + key.hex().substr(0, 16) + " by " + describe(*record) +
                  " ended without storing a result (the process died?); compiling it here");
      return lease;
    }
    if (options.max_wait && now_ms() - waiting_since >= options.max_wait->count()) {
      ::close(fd);
      return std::unique_ptr<CompileLease>();
    }
    detail::clock().sleep_for(pause);
    pause = std::min(pause * 2, options.max_poll);
  }
}

std::optional<LeaseRecord> CompileLease::read(const CacheDir& dir, const Digest& key) {
  const auto fd = dir.open_file(key.hex(), O_RDONLY);
  if (!fd)
    return std::nullopt;
  auto record = read_record(*fd);
  ::close(*fd);
  return record;
}

namespace {

constexpr std::string_view k_handed_suffix = ".handed";
constexpr std::int64_t k_handed_life_s = 24 * 3600;

} // namespace

void CompileLease::mark_handed_over(const CacheDir& dir, const Digest& key) {
  if (auto fd = dir.open_file(key.hex() + std::string(k_handed_suffix), O_WRONLY | O_CREAT))
    ::close(*fd);
}

bool CompileLease::handed_over(const CacheDir& dir, const Digest& key) {
  const auto found = dir.stat(key.hex() + std::string(k_handed_suffix));
  return found && S_ISREG(found->st_mode);
}

void CompileLease::clear_handed_over(const CacheDir& dir, const Digest& key) {
  dir.remove(key.hex() + std::string(k_handed_suffix));
}

std::size_t CompileLease::reap(const CacheDir& dir) {
  std::size_t removed = 0;
  const std::int64_t now_s = now_ms() / 1000;
  for (const std::string& name : dir.names()) {
    if (name.size() > k_handed_suffix.size() &&
        name.compare(name.size() - k_handed_suffix.size(), k_handed_suffix.size(),
                     k_handed_suffix) == 0) {
      if (const auto found = dir.stat(name); found && now_s - found->st_mtime > k_handed_life_s)
        dir.remove(name);
      continue;
    }
    if (!Digest::from_hex(name))
      continue;
    const auto opened = dir.open_file(name, O_RDWR);
    if (!opened)
      continue;
    const int fd = *opened;
    // Holding the current generation's byte of a still-linked file is exactly what a holder
    // has: removing it then is what a holder does when it lets go.
    const auto record = read_record(fd);
    const std::uint32_t current = record ? record->generation : 0;
    if (lock_byte(fd, F_WRLCK, current)) {
      if (is_linked(fd, dir, name) && dir.remove(name))
        ++removed;
      lock_byte(fd, F_UNLCK, current);
    }
    ::close(fd);
  }
  return removed;
}

} // namespace jitcache::detail
