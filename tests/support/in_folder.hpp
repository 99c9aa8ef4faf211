#pragma once
// A folder made the current one for a scope (which every key searches last for includes, and
// from which relative paths resolve), and the previous one given back whatever ends the scope.

#include <filesystem>

namespace jitcache::test {

/// Makes `folder` (created when absent) the current directory until destroyed.
class InFolder {
public:
  explicit InFolder(const std::filesystem::path& folder)
      : m_before(std::filesystem::current_path()) {
    std::filesystem::create_directories(folder);
    std::filesystem::current_path(folder);
  }
  ~InFolder() { std::filesystem::current_path(m_before); }
  InFolder(const InFolder&) = delete;
  InFolder& operator=(const InFolder&) = delete;

private:
  const std::filesystem::path m_before;
};

} // namespace jitcache::test
