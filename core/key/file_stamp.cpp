#include "core/key/file_stamp.hpp"

#include "core/support/clock.hpp"
#include "core/support/regular_file.hpp"

#include <limits>

#include "core/support/byte_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <unordered_set>
#include <utility>

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

std::optional<std::string> read_stamped(const std::string& path, FileStamp& stamp,
                                        std::uint64_t max_bytes) {
  struct stat st {};
  auto content = read_regular_file(path, max_bytes, &st);
  if (!content)
    return std::nullopt;
  stamp = stamp_from(path, st);
  return std::move(*content);
}

std::int64_t real_time_ns() {
  return clock().wall_ns();
}

bool too_recent(const FileStamp& stamp, StampClock clock, int seconds) {
  const std::int64_t limit = clock() - seconds * 1000000000ll;
  return stamp.exists && (stamp.mtime_ns > limit || stamp.ctime_ns > limit);
}

namespace {

// "/a/b/c.h" -> {"/a/b", "c.h"}; "/a" -> {"/", "a"}; "c.h" -> {".", "c.h"}; "/" -> {"/", "."}.
std::pair<std::string_view, std::string_view> split_path(std::string_view path) {
  const auto slash = path.rfind('/');
  if (slash == std::string_view::npos)
    return {".", path};
  std::string_view dir = path.substr(0, slash), name = path.substr(slash + 1);
  return {dir.empty() ? "/" : dir, name.empty() ? "." : name};
}

// The inverse of split_path, into `out`.
void join_path(std::string_view dir, std::string_view name, std::string& out) {
  if (name == ".") {
    out.assign(dir);
    return;
  }
  out.clear();
  if (dir != ".") {
    out.append(dir);
    if (dir != "/")
      out += '/';
  }
  out.append(name);
}

bool same(const FileStamp& stamp, bool exists, const struct stat& st) {
  if (!exists)
    return !stamp.exists;
  const FileStamp now = stamp_from({}, st);
  return stamp.exists && now.ino == stamp.ino && now.size == stamp.size &&
         now.mtime_ns == stamp.mtime_ns && now.ctime_ns == stamp.ctime_ns;
}

// The stat fields of a stamp, after its path.
void append_fields(std::string& out, const FileStamp& s) {
  append_le<std::uint8_t>(out, s.exists);
  append_le<std::uint64_t>(out, s.ino);
  append_le<std::uint64_t>(out, s.size);
  append_le<std::uint64_t>(out, static_cast<std::uint64_t>(s.mtime_ns));
  append_le<std::uint64_t>(out, static_cast<std::uint64_t>(s.ctime_ns));
}
bool take_fields(std::string_view& in, FileStamp& s) {
  std::uint8_t exists = 0;
  std::uint64_t mtime = 0, ctime = 0;
  if (!take_le(in, exists) || !take_le(in, s.ino) || !take_le(in, s.size) || !take_le(in, mtime) ||
      !take_le(in, ctime))
    return false;
  s.exists = exists != 0;
  s.mtime_ns = static_cast<std::int64_t>(mtime);
  s.ctime_ns = static_cast<std::int64_t>(ctime);
  return true;
}

// Walks an encoded list: `dir(index, path)` once per directory, then `stamp(index, name, s)`
// per stamp (name and path are views into `in`); either returning false stops the walk.
template <typename Dir, typename Stamp> bool walk(std::string_view in, Dir&& dir, Stamp&& stamp) {
  std::uint32_t dirs = 0, count = 0;
  if (!take_le(in, dirs) || dirs > in.size())
    return false;
  for (std::uint32_t i = 0; i < dirs; ++i) {
    std::uint32_t size = 0;
    if (!take_le(in, size) || size > in.size() || !dir(i, in.substr(0, size)))
      return false;
    in.remove_prefix(size);
  }
  if (!take_le(in, count) || count > in.size())
    return false;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t index = 0, size = 0;
    FileStamp s;
    if (!take_le(in, index) || index >= dirs || !take_le(in, size) || size > in.size())
      return false;
    const std::string_view name = in.substr(0, size);
    in.remove_prefix(size);
    if (!take_fields(in, s) || !stamp(index, name, s))
      return false;
  }
  return in.empty();
}

} // namespace

std::string encode_stamps(const std::vector<FileStamp>& stamps) {
  // Grouped by directory (in first-seen order), so that a check holds one directory open at a
  // time.
  std::vector<std::string_view> dirs;
  std::map<std::string_view, std::uint32_t> index;
  std::vector<std::vector<const FileStamp*>> grouped;
  for (const FileStamp& s : stamps) {
    const std::string_view dir = split_path(s.path).first;
    const auto [it, added] = index.emplace(dir, static_cast<std::uint32_t>(dirs.size()));
    if (added) {
      dirs.push_back(dir);
      grouped.emplace_back();
    }
    grouped[it->second].push_back(&s);
  }
  std::string out;
  append_le<std::uint32_t>(out, static_cast<std::uint32_t>(dirs.size()));
  for (std::string_view dir : dirs)
    append_sized<std::uint32_t>(out, dir);
  append_le<std::uint32_t>(out, static_cast<std::uint32_t>(stamps.size()));
  for (std::uint32_t i = 0; i < grouped.size(); ++i)
    for (const FileStamp* s : grouped[i]) {
      append_le<std::uint32_t>(out, i);
      append_sized<std::uint32_t>(out, split_path(s->path).second);
      append_fields(out, *s);
    }
  return out;
}

std::optional<std::vector<FileStamp>> decode_stamps(std::string_view encoded) {
  std::vector<std::string> dirs;
  std::vector<FileStamp> out;
  const bool ok = walk(
      encoded,
      [&](std::uint32_t, std::string_view dir) {
        dirs.emplace_back(dir);
        return true;
      },
      [&](std::uint32_t index, std::string_view name, FileStamp s) {
        join_path(dirs[index], name, s.path);
        out.push_back(std::move(s));
        return true;
      });
  if (!ok)
    return std::nullopt;
  return out;
}

std::optional<StampsExtent> extent_of_stamps(std::string_view encoded) {
  StampsExtent extent;
  std::unordered_set<std::string_view> folders; // views into `encoded`
  const bool ok = walk(
      encoded,
      [&](std::uint32_t, std::string_view dir) {
        // The directory, then its ancestors up to / (or a relative path's first folder), until
        // one already counted: its ancestors are counted too.
        while (!dir.empty() && folders.insert(dir).second) {
          const std::size_t slash = dir.rfind('/');
          if (slash == std::string_view::npos)
            break;
          dir = slash > 0 ? dir.substr(0, slash) : dir.substr(0, dir.size() > 1 ? 1 : 0);
        }
        return true;
      },
      [&](std::uint32_t, std::string_view, const FileStamp&) {
        ++extent.files;
        return true;
      });
  if (!ok)
    return std::nullopt;
  extent.folders = folders.size();
  return extent;
}

bool unchanged(std::string_view encoded) {
  // The first stamp of a directory is stat'ed by its path; the directory is opened (O_PATH) for
  // the others, which are then stat'ed relative to it: one path walk per directory. One
  // directory descriptor at a time: a process holding many descriptors (a CUDA context holds
  // dozens) grows its descriptor table when it opens more, and in a multi-threaded process
  // that waits for an RCU grace period - milliseconds.
  std::vector<std::string> dirs;
  std::uint32_t group = 0;
  bool first_of_group = true;
  int fd = -2;      // -2: not opened; -1: the directory cannot be opened
  std::string path; // NUL-terminated path or name for the stat calls
  const auto close_dir = [&] {
    if (fd >= 0)
      ::close(fd);
    fd = -2;
  };
  const bool ok = walk(
      encoded,
      [&](std::uint32_t, std::string_view dir) {
        dirs.emplace_back(dir);
        return true;
      },
      [&](std::uint32_t index, std::string_view name, const FileStamp& s) {
        if (first_of_group || index != group) {
          close_dir();
          group = index;
          first_of_group = true;
        }
        struct stat st {};
        bool exists;
        if (first_of_group) {
          join_path(dirs[index], name, path);
          exists = ::stat(path.c_str(), &st) == 0;
          first_of_group = false;
        } else {
          if (fd == -2)
            fd = ::open(dirs[index].c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
          path.assign(name);
          exists = fd >= 0 && ::fstatat(fd, path.c_str(), &st, 0) == 0;
        }
        return same(s, exists, st);
      });
  close_dir();
  return ok;
}

} // namespace jitcache::detail
