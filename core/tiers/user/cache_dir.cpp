#include "core/tiers/user/cache_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace jitcache::detail {

namespace fs = std::filesystem;

struct CacheDir::Handle {
  Handle(fs::path p, int descriptor, const struct stat& status)
      : path(std::move(p)), fd(descriptor), st(status) {}
  ~Handle() { ::close(fd); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  fs::path path;
  int fd;
  struct stat st;
};

namespace {

constexpr int k_dir_flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

Error problem(const fs::path& path, const std::string& what) {
  return Error(ErrorCode::io_error, path.string() + " " + what);
}

// Why opening `path` failed: a symlink is named as such (O_NOFOLLOW reports ELOOP, or ENOTDIR
// together with O_DIRECTORY). Leaves errno at `error`.
Error open_problem(const fs::path& path, int at, const char* name, int error) {
  struct stat st {};
  const bool seen =
      (error == ELOOP || error == ENOTDIR) && ::fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
  errno = error;
  if (seen && S_ISLNK(st.st_mode))
    return problem(path, "is a symbolic link; jitcache never follows one in its cache directory");
  if (seen && error == ENOTDIR)
    return problem(path, "is not a directory");
  return problem(path, std::string("cannot be opened: ") + std::strerror(error));
}

} // namespace

CacheDir CacheDir::adopt(fs::path path, int fd) {
  struct stat st {};
  ::fstat(fd, &st);
  CacheDir dir;
  dir.m_dir = std::make_shared<const Handle>(std::move(path), fd, st);
  return dir;
}

Expected<CacheDir> CacheDir::open(const fs::path& path) {
  const int fd = ::open(path.c_str(), k_dir_flags);
  if (fd < 0)
    return open_problem(path, AT_FDCWD, path.c_str(), errno);
  return adopt(path, fd);
}

Expected<CacheDir> CacheDir::subdir(const std::string& name, bool create) const {
  const fs::path path = m_dir->path / name;
  if (create && ::mkdirat(m_dir->fd, name.c_str(), 0700) != 0 && errno != EEXIST)
    return problem(path, std::string("cannot be made: ") + std::strerror(errno));
  const int fd = ::openat(m_dir->fd, name.c_str(), k_dir_flags);
  if (fd < 0)
    return open_problem(path, m_dir->fd, name.c_str(), errno);
  return adopt(path, fd);
}

const fs::path& CacheDir::path() const {
  return m_dir->path;
}

int CacheDir::fd() const {
  return m_dir->fd;
}

const struct stat& CacheDir::status() const {
  return m_dir->st;
}

std::optional<struct stat> CacheDir::stat(const std::string& name) const {
  struct stat st {};
  if (::fstatat(m_dir->fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return std::nullopt;
  return st;
}

Expected<int> CacheDir::open_file(const std::string& name, int flags, bool* created) const {
  const fs::path path = m_dir->path / name;
  const bool create = flags & O_CREAT;
  // O_NONBLOCK: a FIFO planted there must not hang the open (cleared again below).
  flags = (flags & ~(O_CREAT | O_EXCL)) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
  if (created)
    *created = false;
  int fd = -1;
  // Open what is there, or make it with O_EXCL; a file made by another process between the two
  // is opened on the next round.
  for (int round = 0; round < 8 && fd < 0; ++round) {
    fd = ::openat(m_dir->fd, name.c_str(), flags);
    if (fd >= 0 || errno != ENOENT || !create)
      break;
    fd = ::openat(m_dir->fd, name.c_str(), flags | O_CREAT | O_EXCL, 0600);
    if (fd >= 0 && created)
      *created = true;
    else if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    return open_problem(path, m_dir->fd, name.c_str(), errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    ::close(fd);
    // A hard link could be another file of this user's, outside the cache.
    errno = S_ISREG(st.st_mode) ? EMLINK : EINVAL;
    return problem(path, S_ISREG(st.st_mode) ? "has more than one link; not using it"
                                             : "is not a regular file");
  }
  ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK & ~O_ACCMODE);
  return fd;
}

bool CacheDir::remove(const std::string& name) const {
  return ::unlinkat(m_dir->fd, name.c_str(), 0) == 0;
}

bool CacheDir::rename(const std::string& from, const std::string& to) const {
  return ::renameat(m_dir->fd, from.c_str(), m_dir->fd, to.c_str()) == 0;
}

std::vector<std::string> CacheDir::names() const {
  std::vector<std::string> result;
  // fdopendir takes over the descriptor it is given: give it a fresh one of the same directory.
  const int fd = ::openat(m_dir->fd, ".", k_dir_flags);
  if (fd < 0)
    return result;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return result;
  }
  while (const dirent* item = ::readdir(d)) {
    const std::string name = item->d_name;
    if (name != "." && name != "..")
      result.push_back(name);
  }
  ::closedir(d);
  return result;
}

bool CacheDir::sync() const {
  return ::fsync(m_dir->fd) == 0;
}

} // namespace jitcache::detail
