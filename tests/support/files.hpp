#pragma once
// Whole files, read and written by the tests.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace jitcache::test {

/// The bytes of the file at `p`: empty when it cannot be opened, and what was read before a read
/// error (a /proc file of a process that has just ended fails with ESRCH), never an exception.
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf(); // catches the file buffer's exception on a read error
  return text.str();
}

/// Writes `text` to `p` (its folders made first), replacing it.
inline void write_file(const std::filesystem::path& p, const std::string& text) {
  if (p.has_parent_path())
    std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

} // namespace jitcache::test
