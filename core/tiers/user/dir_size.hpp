#pragma once

#include <cstdint>
#include <string>

namespace jitcache::detail {

/// What a directory tree holds. Symlinks are neither followed nor counted as files.
struct DirUsage {
  bool present = false;    ///< the path exists (as anything, a dangling symlink included)
  std::uint64_t bytes = 0; ///< total size of the regular files in the tree
  std::uint64_t files = 0; ///< number of regular files
  std::string error;       ///< why the tree could not be read in full; empty when it could
};

/// Sizes the tree at `dir` (empty: absent). Never fails: a read error is in DirUsage::error.
DirUsage dir_usage(const std::string& dir);

/// "12.3 MiB in 42 files", "absent" or "unreadable: <reason>" for the tree at `dir`. Never
/// fails; symlinks are not followed. For `jitcache info`'s report of the runtimes' own caches.
std::string describe_dir_size(const std::string& dir);

} // namespace jitcache::detail
