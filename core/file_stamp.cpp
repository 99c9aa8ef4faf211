#include "core/file_stamp.hpp"

#include "core/byte_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

namespace jitcache::detail {

FileStamp stamp_from(const std::string& path, const struct stat& st) {
  return FileStamp{path,
                   true,
                   static_cast<std::uint64_t>(st.st_ino),
                   static_cast<std::uint64_t>(st.st_size),
                   st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec,
                   st.st_ctim.tv_sec * 1000000000ll + st.st_ctim.tv_nsec};
}

FileStamp stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return FileStamp{path};
  return stamp_from(path, st);
}

std::optional<std::string> read_stamped(const std::string& path, FileStamp& stamp) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  struct stat st {};
  std::optional<std::string> out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    stamp = stamp_from(path, st);
    std::string content(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = ::read(fd, content.data() + done, content.size() - done);
      if (n <= 0)
        break;
      done += static_cast<std::size_t>(n);
    }
    content.resize(done);
    out = std::move(content);
  }
  ::close(fd);
  return out;
}

bool unchanged(const std::vector<FileStamp>& stamps) {
  for (const FileStamp& stamp : stamps)
    if (!(stamp_of(stamp.path) == stamp))
      return false;
  return true;
}

bool too_recent(const FileStamp& stamp, int seconds) {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const std::int64_t limit = (now.tv_sec - seconds) * 1000000000ll + now.tv_nsec;
  return stamp.exists && (stamp.mtime_ns > limit || stamp.ctime_ns > limit);
}

std::string encode_stamps(const std::vector<FileStamp>& stamps) {
  std::string out;
  append_le<std::uint64_t>(out, stamps.size());
  for (const FileStamp& s : stamps) {
    append_sized(out, s.path);
    append_le<std::uint64_t>(out, s.exists);
    append_le<std::uint64_t>(out, s.ino);
    append_le<std::uint64_t>(out, s.size);
    append_le<std::uint64_t>(out, static_cast<std::uint64_t>(s.mtime_ns));
    append_le<std::uint64_t>(out, static_cast<std::uint64_t>(s.ctime_ns));
  }
  return out;
}

std::optional<std::vector<FileStamp>> decode_stamps(std::string_view& in) {
  std::uint64_t count = 0;
  if (!take_le(in, count) || count > in.size())
    return std::nullopt;
  std::vector<FileStamp> out(static_cast<std::size_t>(count));
  for (FileStamp& s : out) {
    std::uint64_t exists = 0, mtime = 0, ctime = 0;
    if (!take_sized(in, s.path) || !take_le(in, exists) || !take_le(in, s.ino) ||
        !take_le(in, s.size) || !take_le(in, mtime) || !take_le(in, ctime))
      return std::nullopt;
    s.exists = exists != 0;
    s.mtime_ns = static_cast<std::int64_t>(mtime);
    s.ctime_ns = static_cast<std::int64_t>(ctime);
  }
  return out;
}

} // namespace jitcache::detail
