#include "tests/support/temp_dir.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace jitcache::test {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "jitcache-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("mkdtemp failed");
  m_path = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Tests make directories read-only on purpose; give write access back before removing.
  for (auto it = std::filesystem::recursive_directory_iterator(m_path, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
  std::filesystem::permissions(m_path, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(m_path, ec);
}

} // namespace jitcache::test
