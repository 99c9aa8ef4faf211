#pragma once

#include <filesystem>

namespace jitcache::test {

/// A fresh directory under the system temp dir, removed (recursively) on destruction, after
/// killing the processes that still name it in their arguments or environment (a detached
/// `jitcache store` would write it again once removed).
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return m_path; }

private:
  std::filesystem::path m_path;
};

} // namespace jitcache::test
