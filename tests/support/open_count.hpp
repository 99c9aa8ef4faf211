#pragma once
// Counts the opens of the files in one directory (not its subdirectories), by name, from its
// construction on: what a process read, seen by the kernel (inotify), not by the code under test.

#include <filesystem>
#include <map>
#include <string>

#include <sys/inotify.h>
#include <unistd.h>

namespace jitcache::test {

class OpenCount {
public:
  explicit OpenCount(const std::filesystem::path& dir)
      : m_fd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (m_fd >= 0)
      m_watch = inotify_add_watch(m_fd, dir.c_str(), IN_OPEN);
  }
  ~OpenCount() {
    if (m_fd >= 0)
      close(m_fd);
  }
  OpenCount(const OpenCount&) = delete;
  OpenCount& operator=(const OpenCount&) = delete;

  bool watching() const { return m_watch >= 0; }

  // The files opened since the last call (their events are queued before the opener goes on).
  std::map<std::string, int> take() {
    std::map<std::string, int> opened;
    alignas(inotify_event) char buffer[64 * 1024];
    for (ssize_t got; (got = read(m_fd, buffer, sizeof buffer)) > 0;)
      for (ssize_t at = 0; at < got;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        if (event->len > 0 && !(event->mask & IN_ISDIR))
          ++opened[event->name];
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    return opened;
  }

private:
  int m_fd = -1;
  int m_watch = -1;
};

// `opened` as "name xN " for a failure message.
inline std::string names(const std::map<std::string, int>& opened) {
  std::string out;
  for (const auto& [name, count] : opened)
    out += name + " x" + std::to_string(count) + " ";
  return out;
}

} // namespace jitcache::test
