#include "core/support/regular_file.hpp"

#include <jitcache/config.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace jitcache::detail {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

Error failure(const std::string& path, const std::string& why) {
  return Error(ErrorCode::io_error, "cannot read " + path + ": " + why);
}

} // namespace

Expected<std::string> read_regular_file(const std::string& path, std::uint64_t max_bytes,
                                        struct stat* st) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return failure(path, std::strerror(errno));
  struct stat own {};
  struct stat& info = st ? *st : own;
  Expected<std::string> out = failure(path, "not read");
  if (::fstat(fd, &info) != 0) {
    out = failure(path, std::strerror(errno));
  } else if (!S_ISREG(info.st_mode)) {
    out = failure(path, std::string(kind_of(info.st_mode)) + ", not a regular file");
  } else if (static_cast<std::uint64_t>(info.st_size) > max_bytes) {
    out = failure(path, std::to_string(info.st_size) + " bytes, over the limit of " +
                            format_size(max_bytes));
  } else {
    std::string content(static_cast<std::size_t>(info.st_size), '\0');
    std::size_t done = 0;
    ssize_t n = 0;
    while (done < content.size() &&
           ((n = ::read(fd, content.data() + done, content.size() - done)) > 0 || errno == EINTR))
      done += n > 0 ? static_cast<std::size_t>(n) : 0;
    if (n < 0) {
      out = failure(path, std::strerror(errno));
    } else {
      content.resize(done); // a file that shrank while read is read as it is now
      out = std::move(content);
    }
  }
  ::close(fd);
  return out;
}

Expected<int> open_regular_file(const std::string& path, int flags, mode_t mode, struct stat* st,
                                int dir_fd) {
  const int fd =
      ::openat(dir_fd, path.c_str(), flags | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    // What is there, when that is why: O_NOFOLLOW's ELOOP, a FIFO without a reader's ENXIO.
    struct stat there {};
    if ((err == ELOOP || err == ENXIO || err == EISDIR) &&
        ::fstatat(dir_fd, path.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
        !S_ISREG(there.st_mode))
      return Error(ErrorCode::io_error,
                   S_ISLNK(there.st_mode)
                       ? "a symbolic link, not followed"
                       : std::string(kind_of(there.st_mode)) + ", not a regular file");
    return Error(ErrorCode::io_error, std::strerror(err));
  }
  struct stat own {};
  struct stat& info = st ? *st : own;
  std::string why;
  if (::fstat(fd, &info) != 0)
    why = std::strerror(errno);
  else if (!S_ISREG(info.st_mode))
    why = std::string(kind_of(info.st_mode)) + ", not a regular file";
  if (!why.empty()) {
    ::close(fd);
    return Error(ErrorCode::io_error, why);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

} // namespace jitcache::detail
