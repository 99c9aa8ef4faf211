#pragma once

#include <climits>
#include <string_view>

namespace jitcache::detail {

/// The process's current directory, read once with getcwd(2) into a buffer of its own: no
/// allocation and no path parsing, since a repeated request reads it on every call (relative
/// paths in its options depend on it).
class CurrentDirectory {
public:
  CurrentDirectory();
  /// The absolute path; empty when the directory was removed (or its path is longer than
  /// PATH_MAX), which callers report or treat as "not the same directory".
  std::string_view path() const { return m_path; }

private:
  char m_path[PATH_MAX];
};

} // namespace jitcache::detail
