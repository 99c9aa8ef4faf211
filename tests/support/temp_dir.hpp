#pragma once

#include <filesystem>

namespace jitcache::test {

/// A fresh directory under the system temp dir, removed (recursively) on destruction.
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
