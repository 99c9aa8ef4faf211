#pragma once

#include "core/support/fs_check.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <unordered_map>
#include <utility>
#include <vector>

namespace jitcache::detail {

/// Tells, without a stat call per file, that the files a set of stamps (encode_stamps) describes
/// have not changed: an inotify instance watches every directory entry that resolving their paths
/// looks up (each ancestor for the next name, each symlink's target, the file itself, and a
/// stamped directory for any entry), and every event that concerns one bumps a generation. A
/// check is then one ioctl(FIONREAD) on the instance, however many files there are.
///
/// A directory is watched for its names (an entry created, removed, renamed) and for its own
/// removal, never for its attributes or its entries' contents: such a mask makes the kernel walk
/// every cached entry of the directory when the watch is added (35 ms for a busy /tmp). So a
/// directory on the path whose permissions change (a header made unreachable, not different)
/// keeps the proof until the set is stat'ed again; a stamped file's content and attributes, and
/// every rename or replacement on its path, still end it at once. The other direction cannot be
/// missed: a path that could not be resolved for want of a permission is never watched.
///
/// Where inotify cannot see every change, watch() declines and the caller keeps stat-ing: a
/// network or FUSE filesystem (other machines' writes raise no event), the watch or instance
/// limit reached, a directory that cannot be read, and a forked child (which shares the parent's
/// instance and must not drain its events). An instance holds at most its budget of watches: by
/// default its share of the user's (max_user_watches / max_user_instances, so that the most
/// instances a user may open, watching as much, hold no more than the user may; read once it
/// holds 64, the share under the kernel's old defaults), leaving the rest to the user's other
/// programs and processes. A watch() that declines removes the watches it
/// added: a set that cannot be watched holds none. inotify does not report writes through a shared
/// memory map or a filesystem mounted over a watched directory; the stat checks never guarded
/// mounts either, and a header is not written through a map.
///
/// Not thread-safe: the owner serialises every call. The instance is opened at the first watch()
/// and closed by the destructor.
class FileWatch {
public:
  /// What a check compares against: the generation after the watches were set, and the current
  /// directory when a stamped path is relative (resolved from it; chdir raises no event).
  struct Ticket {
    std::uint64_t generation = 0;
    std::string cwd;    ///< empty: every path is absolute
    bool empty = false; ///< no stamp at all: nothing can change
  };

  /// `probe` tells which filesystem a directory is on (tests pretend a network one); `budget`:
  /// the most watches the instance may hold (0: its share of the user's, read once it holds 64).
  explicit FileWatch(FilesystemProbe probe = probe_filesystem, std::size_t budget = 0);
  ~FileWatch();
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  /// Watches everything the stamps in `encoded` depend on. Returns the ticket to check them by,
  /// taken after the watches were set and pending events drained: a change made before this
  /// call is not reported, so the caller proves the stamps (unchanged()) after it. nullopt when
  /// something cannot be watched (see the class comment) or `encoded` is malformed.
  std::optional<Ticket> watch(std::string_view encoded);

  /// Whether nothing that concerns a watched path happened since `ticket` was taken (and the
  /// current directory is the same, for relative paths). Drains pending events: one ioctl(2)
  /// when there are none. False in a forked child, and after the kernel's event queue
  /// overflowed or a watch was removed.
  bool unchanged_since(const Ticket& ticket);

private:
  /// What events on one watch descriptor concern a watched path.
  struct Interest {
    std::uint32_t self = 0;      ///< events on the watched object itself (no name)
    std::uint32_t any_entry = 0; ///< events on any entry of a watched directory
    std::unordered_map<std::string, std::uint32_t> entries; ///< events on named entries
  };
  /// What concerns a path's last object: a file's content and attributes, or a directory's
  /// entries (a stamped directory changes when one is added, removed or renamed).
  static Interest stamped(bool directory);
  bool open();
  /// Watches `path` for `mask` (once per path and watch() call) and returns what its watch
  /// descriptor's events concern, for the caller to add to; null when it cannot be watched.
  /// `same_fs_as`: a directory known to be on the path's filesystem (no probe needed), or null.
  /// `once`: the caller adds `path` once in this watch() call (a stamped file), so it is not
  /// noted in m_added.
  Interest* add(const std::string& path, std::uint32_t mask,
                const std::string* same_fs_as = nullptr, bool once = false);
  /// Watches `path` as a stamped file or directory (stamped()); false when it cannot be.
  bool add_stamped(const std::string& path, bool directory,
                   const std::string* same_fs_as = nullptr);
  /// Watches what resolving `path` (relative to `cwd`) looks up; false when something on it
  /// cannot be watched.
  bool watch_path(const std::string& path, const std::string& cwd);
  /// Looks `rest`'s names up from `dir`, following symlinks (`links` followed so far, both
  /// updated), and watches each entry looked up. With `stamp`, the last name is the stamped
  /// object, watched as such. Returns watch_path()'s answer when the walk ends (a stamp watched,
  /// an absent or non-folder entry, a failure); nullopt when, without `stamp`, every name led to
  /// a folder, which `dir` then is.
  std::optional<bool> walk(std::deque<std::string>& rest, std::string& dir, int& links, bool stamp);
  /// Whether the instance holds its budget of watches already (reading its share when due).
  bool over_budget();
  /// Removes the watches this watch() call added (it declines).
  void remove_added();
  void drain();

  FilesystemProbe m_probe;
  std::size_t m_budget;
  int m_fd = -1;
  unsigned m_fork_generation = 0;
  bool m_failed = false; ///< the instance could not be opened: never try again
  std::uint64_t m_generation = 0;
  std::map<int, Interest> m_interests;
  /// Per directory (not per file: a file is on its folder's filesystem unless mounted over, which
  /// walk() sees by the device): whether inotify sees every change.
  std::unordered_map<std::string, bool> m_local;
  /// This watch()'s watches of folders: per path, its descriptor and the mask asked.
  std::unordered_map<std::string, std::pair<int, std::uint32_t>> m_added;
  std::vector<int> m_created; ///< this watch()'s new watch descriptors
  std::set<int> m_removed;    ///< removed by remove_added(): their IN_IGNORED is no news
  /// What this watch() found at each entry it looked up on the way to a stamped path's last
  /// name (a thousand headers share a few dozen folders: each is looked up, watched and lstat'ed
  /// once per watch(), not once per header).
  struct Looked {
    mode_t mode = 0;    ///< 0: absent
    dev_t device = 0;   ///< its filesystem
    std::string target; ///< a symlink's
  };
  std::unordered_map<std::string, Looked> m_looked;
  /// Where this watch() resolved each stamped path's folders to (the text before its last
  /// slash): walk()'s outcome over them, or the folder reached and the symlinks followed.
  struct Folder {
    std::optional<bool> ended;
    std::string dir;
    int links = 0;
  };
  std::unordered_map<std::string, Folder> m_folders;
};

} // namespace jitcache::detail
