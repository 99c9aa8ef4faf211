#pragma once

#include <jitcache/expected.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace jitcache::detail {

/// A directory of the cache (the user tier's directory, its `leases/`), opened once: every
/// file jitcache creates, opens, renames or deletes inside it goes through this object, relative
/// to the descriptor (openat, mkdirat, renameat, unlinkat), and never follows a symbolic link
/// (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW). A symlink planted inside the cache directory - or as the
/// directory's own last component - is refused, so nothing outside the cache is ever created,
/// written or deleted through one. Components above the last one are followed: a user may keep
/// ~/.cache on another disk through a link of their own.
///
/// Names are single path components (no '/'). Copies share the descriptor, which is closed with
/// the last copy; a copy is usable from any thread, and in a child after fork().
class CacheDir {
public:
  CacheDir() = default; ///< none: valid() is false

  /// Opens the existing directory `path` (O_DIRECTORY | O_NOFOLLOW). Errors: io_error naming the
  /// path when it is absent, a symbolic link, not a directory, or cannot be opened.
  static Expected<CacheDir> open(const std::filesystem::path& path);

  /// Opens the subdirectory `name` as open() does; with `create`, makes it first (mode 0700)
  /// when absent. Errors as open(), and io_error when it cannot be made.
  Expected<CacheDir> subdir(const std::string& name, bool create) const;

  bool valid() const { return m_dir != nullptr; }
  const std::filesystem::path& path() const;
  /// The directory's own descriptor (owned by this object and its copies).
  int fd() const;
  /// What fstat said of the directory when it was opened.
  const struct stat& status() const;

  /// What is at `name`, not following a symlink; std::nullopt when nothing is there (or it
  /// cannot be examined).
  std::optional<struct stat> stat(const std::string& name) const;

  /// Opens the regular file `name` with `flags` (O_RDONLY, O_RDWR or O_WRONLY; O_CLOEXEC and
  /// O_NOFOLLOW are added). With O_CREAT in `flags`, a file that is absent is made (mode 0600,
  /// O_EXCL: never through a link, never someone else's) and `*created` says whether this call
  /// made it. Returns the descriptor, which the caller closes. Errors: io_error naming the path
  /// when it is absent (without O_CREAT), a symbolic link, not a regular file, a file with more
  /// than one link, or cannot be opened (the message has strerror; errno is ELOOP, EINVAL,
  /// EMLINK or the open's).
  Expected<int> open_file(const std::string& name, int flags, bool* created = nullptr) const;

  /// Removes the file or symlink `name` (never what a symlink points to). False when it could
  /// not (errno says why; ENOENT included).
  bool remove(const std::string& name) const;
  /// Renames `from` to `to`, both inside this directory (a symlink is renamed, never followed).
  bool rename(const std::string& from, const std::string& to) const;
  /// The names in the directory, "." and ".." left out (empty when it cannot be read).
  std::vector<std::string> names() const;
  /// fsync of the directory itself (after a rename, so that it survives a crash).
  bool sync() const;

private:
  struct Handle;
  static CacheDir adopt(std::filesystem::path path, int fd);
  std::shared_ptr<const Handle> m_dir;
};

} // namespace jitcache::detail
