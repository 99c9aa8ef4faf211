#include "core/engine/file_watch.hpp"

#include "core/key/file_stamp.hpp"
#include "core/support/current_directory.hpp"
#include "core/support/fork_guard.hpp"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <deque>
#include <unordered_set>

namespace jitcache::detail {

namespace {

// What a directory is watched for: only events of its names and of itself. Any event that an
// entry's inode may raise (IN_ATTRIB, IN_MODIFY, IN_ACCESS, IN_OPEN, IN_CLOSE_*) in a directory's
// mask makes the kernel flag every cached entry of the directory, negative ones included, when
// the watch is added: 35 ms for a /tmp of 525 files (kernel 6.18), paid again by each process,
// where these masks take 0.02 ms. A stamped file's own content and attributes are watched on the
// file itself.
//
// A directory entry on a watched path: created, removed, renamed in or out.
constexpr std::uint32_t k_entry = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
// A stamped file itself, whatever path (a hard link elsewhere) it is written through.
constexpr std::uint32_t k_file_self = IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
// A stamped directory: its stamp changes when an entry is added, removed or renamed.
constexpr std::uint32_t k_dir_self = IN_DELETE_SELF | IN_MOVE_SELF;

// Symlinks followed per path before giving up, as the kernel's own limit (ELOOP).
constexpr int k_max_links = 40;

constexpr long k_fuse_magic = 0x65735546;

// The kernel's limit `name` (/proc/sys/fs/inotify/NAME), or `otherwise` where it cannot be read.
std::size_t inotify_limit(const char* name, std::size_t otherwise) {
  const int fd =
      ::open((std::string("/proc/sys/fs/inotify/") + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return otherwise;
  char text[32] = {};
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  const unsigned long long value = n > 0 ? std::strtoull(text, nullptr, 10) : 0;
  return value > 0 ? static_cast<std::size_t>(value) : otherwise;
}

// The watches an instance may hold before it reads its share of the user's (the share under the
// kernel's defaults before memory-sized limits: 8,192 watches, 128 instances).
constexpr std::size_t k_watches_before_share = 8192 / 128;

// An instance's share of the user's watches: as many as leave enough for each of the instances
// the user may open.
std::size_t share_of_user_watches() {
  return std::max<std::size_t>(1, inotify_limit("max_user_watches", 8192) /
                                      inotify_limit("max_user_instances", 128));
}

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string parent_of(const std::string& dir) {
  const auto slash = dir.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
}

// Puts the components of `path` in front of those still to resolve (a symlink's target comes
// before the rest of the path that led to it).
void split_into(const std::string& path, std::deque<std::string>& out) {
  std::deque<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto slash = path.find('/', start);
    const auto end = slash == std::string::npos ? path.size() : slash;
    if (end > start)
      parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  out.insert(out.begin(), parts.begin(), parts.end());
}

} // namespace

FileWatch::Interest FileWatch::stamped(bool directory) {
  Interest interest;
  interest.self = directory ? k_dir_self : k_file_self;
  interest.any_entry = directory ? k_entry : 0;
  return interest;
}

FileWatch::FileWatch(FilesystemProbe probe, std::size_t budget)
    : m_probe(probe), m_budget(budget) {}

FileWatch::~FileWatch() {
  if (m_fd >= 0)
    ::close(m_fd);
}

bool FileWatch::open() {
  if (m_fd >= 0)
    return m_fork_generation == fork_generation();
  if (m_failed)
    return false;
  m_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  m_failed = m_fd < 0;
  m_fork_generation = fork_generation();
  return !m_failed;
}

FileWatch::Interest* FileWatch::add(const std::string& path, std::uint32_t mask,
                                    const std::string* same_fs_as, bool once) {
  // A file on a folder's filesystem is as watchable as the folder, which is remembered: the
  // files themselves (a thousand headers per watch()) are not.
  auto local = m_local.find(same_fs_as ? *same_fs_as : path);
  if (local == m_local.end() && same_fs_as)
    local = m_local.find(path);
  if (local == m_local.end()) {
    const Filesystem fs = m_probe(path);
    // Writes made on other machines raise no event here.
    local = m_local.emplace(path, !fs.network && fs.type != k_fuse_magic).first;
  }
  if (!local->second)
    return nullptr;
  // One inotify_add_watch per path and watch() call. A file's path comes once per call (each
  // stamp's path is walked once, and no path walks through a file): only folders are noted.
  std::pair<int, std::uint32_t> unnoted{-1, 0};
  auto& [wd, added] = once ? unnoted : m_added[path];
  if ((mask & ~added) != 0 || added == 0) {
    wd = ::inotify_add_watch(m_fd, path.c_str(), mask | IN_MASK_ADD | IN_DONT_FOLLOW);
    if (wd < 0) {
      m_added.erase(path);
      return nullptr;
    }
    if (!m_interests.count(wd)) { // a new watch, not another path to a watched inode
      m_created.push_back(wd);
      if (over_budget()) {
        m_interests[wd];     // removed with the others this call added
        m_added.erase(path); // `wd` and `added` refer into it: not used after
        return nullptr;
      }
    }
    added |= mask;
  }
  return &m_interests[wd];
}

bool FileWatch::add_stamped(const std::string& path, bool directory,
                            const std::string* same_fs_as) {
  const Interest self = stamped(directory);
  Interest* held = add(path, self.self | self.any_entry, same_fs_as, !directory);
  if (!held)
    return false;
  held->self |= self.self;
  held->any_entry |= self.any_entry;
  return true;
}

// Looks `rest`'s names up from `dir` as the kernel would, one directory entry at a time,
// watching each entry it looks up: whatever would make the path resolve elsewhere, or to changed
// content, raises an event.
std::optional<bool> FileWatch::walk(std::deque<std::string>& rest, std::string& dir, int& links,
                                    bool stamp) {
  while (!rest.empty()) {
    const std::string name = std::move(rest.front());
    rest.pop_front();
    if (name == ".")
      continue;
    if (name == "..") {
      dir = parent_of(dir);
      continue;
    }
    const std::string next = join(dir, name);
    // A folder is looked up once per watch() for all the paths through it; a stamped path's
    // last name is looked up once (each path is walked once), and not noted.
    const bool last = stamp && rest.empty();
    Looked own;
    auto looked = last ? m_looked.end() : m_looked.find(next);
    if (looked == m_looked.end()) {
      Interest* folder = add(dir, k_entry);
      if (!folder)
        return false;
      folder->entries[name] |= k_entry;
      Looked found;
      struct stat st {};
      if (::lstat(next.c_str(), &st) == 0) {
        found.mode = st.st_mode;
        found.device = st.st_dev;
      } else if (errno != ENOENT) {
        return false; // unreachable (a folder that may not be searched), not absent: stat it
      }
      if (S_ISLNK(found.mode)) {
        char target[PATH_MAX];
        const ssize_t n = ::readlink(next.c_str(), target, sizeof target);
        if (n <= 0 || n == static_cast<ssize_t>(sizeof target))
          return false;
        found.target.assign(target, static_cast<std::size_t>(n));
      }
      if (last)
        own = std::move(found);
      else
        looked = m_looked.emplace(next, std::move(found)).first;
    }
    const Looked& entry = last ? own : looked->second;
    if (entry.mode == 0)
      return true; // absent: its creation is an event on `dir`
    if (S_ISLNK(entry.mode)) {
      if (++links > k_max_links)
        return false;
      split_into(entry.target, rest);
      if (entry.target.front() == '/')
        dir = "/";
      continue;
    }
    if (!rest.empty() || !stamp) {
      if (!S_ISDIR(entry.mode))
        return true; // resolution stops here (ENOTDIR) until the entry is replaced
      dir = next;
      continue;
    }
    // A file on its folder's filesystem (not mounted over) is watched as that folder is.
    auto folder = m_looked.find(dir);
    const bool same_fs = folder != m_looked.end() && folder->second.device == entry.device;
    return add_stamped(next, S_ISDIR(entry.mode), same_fs ? &dir : nullptr);
  }
  if (!stamp)
    return std::nullopt; // every name looked up: `dir` is the folder they lead to
  // The path named a directory through "." or ".." last: watch it as a stamped directory.
  return add_stamped(dir, true);
}

bool FileWatch::watch_path(const std::string& path, const std::string& cwd) {
  std::string dir = path.front() == '/' ? "/" : cwd;
  int links = 0;
  std::deque<std::string> rest;
  const auto slash = path.rfind('/');
  const std::string_view name =
      slash == std::string::npos ? std::string_view() : std::string_view(path).substr(slash + 1);
  if (slash == std::string::npos || slash == 0 || name.empty() || name == "." || name == "..") {
    split_into(path, rest);
    return walk(rest, dir, links, true).value_or(true);
  }
  // The folders before the last name, resolved once per watch() for every header in them.
  auto [folder, fresh] = m_folders.try_emplace(path.substr(0, slash));
  Folder& found = folder->second;
  if (fresh) {
    found.dir = dir;
    std::deque<std::string> folders;
    split_into(folder->first, folders);
    found.ended = walk(folders, found.dir, found.links, false);
  }
  if (found.ended)
    return *found.ended;
  dir = found.dir;
  links = found.links;
  rest.emplace_back(name);
  return walk(rest, dir, links, true).value_or(true);
}

std::optional<FileWatch::Ticket> FileWatch::watch(std::string_view encoded) {
  const auto stamps = decode_stamps(encoded);
  if (!stamps)
    return std::nullopt;
  Ticket ticket;
  if (stamps->empty()) {
    ticket.empty = true;
    return ticket;
  }
  if (!open())
    return std::nullopt;
  std::string cwd;
  m_added.clear();
  m_looked.clear();
  m_folders.clear();
  m_created.clear();
  std::unordered_set<std::string_view> done; // views of `stamps`' paths: each walked once
  done.reserve(stamps->size());
  for (const FileStamp& stamp : *stamps) {
    bool watched = !stamp.path.empty();
    if (watched && stamp.path.front() != '/' && cwd.empty()) {
      const CurrentDirectory now;
      cwd = ticket.cwd = std::string(now.path());
      watched = !cwd.empty();
    }
    if (!watched || (done.insert(stamp.path).second && !watch_path(stamp.path, cwd))) {
      remove_added();
      return std::nullopt;
    }
  }
  drain();
  ticket.generation = m_generation;
  return ticket;
}

bool FileWatch::over_budget() {
  if (m_budget == 0 && m_interests.size() < k_watches_before_share)
    return false; // a few headers' watches: no need to read the kernel's limits
  if (m_budget == 0)
    m_budget = share_of_user_watches();
  return m_interests.size() >= m_budget;
}

void FileWatch::remove_added() {
  for (int wd : m_created) {
    ::inotify_rm_watch(m_fd, wd);
    m_interests.erase(wd);
    m_removed.insert(wd);
  }
  m_created.clear();
}

void FileWatch::drain() {
  int pending = 0; // FIONREAD is the cheaper call when nothing is queued, the usual case
  if (::ioctl(m_fd, FIONREAD, &pending) == 0 && pending == 0)
    return;
  alignas(inotify_event) char buf[16 * 1024];
  for (;;) {
    const ssize_t n = ::read(m_fd, buf, sizeof buf);
    if (n <= 0)
      return; // EAGAIN: nothing pending
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buf + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if ((event->mask & IN_IGNORED) && m_removed.erase(event->wd))
        continue; // a watch that remove_added() took away: nothing watched depended on it
      if (event->mask & (IN_Q_OVERFLOW | IN_UNMOUNT | IN_IGNORED)) {
        // Events were lost, or a watch is gone (its object deleted or unmounted): nothing
        // watched can be trusted until it is watched again.
        ++m_generation;
        if (event->mask & IN_IGNORED)
          m_interests.erase(event->wd);
        continue;
      }
      const auto it = m_interests.find(event->wd);
      if (it == m_interests.end())
        continue;
      const Interest& interest = it->second;
      std::uint32_t wanted = interest.self;
      if (event->len > 0) {
        wanted = interest.any_entry;
        const auto entry = interest.entries.find(std::string(event->name));
        if (entry != interest.entries.end())
          wanted |= entry->second;
      }
      if (event->mask & wanted)
        ++m_generation;
    }
  }
}

bool FileWatch::unchanged_since(const Ticket& ticket) {
  if (ticket.empty)
    return true;
  if (m_fd < 0 || m_fork_generation != fork_generation())
    return false;
  drain();
  if (m_generation != ticket.generation)
    return false;
  if (ticket.cwd.empty())
    return true;
  return ticket.cwd == CurrentDirectory().path();
}

} // namespace jitcache::detail
