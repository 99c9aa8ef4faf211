#include "core/dir_size.hpp"

#include <jitcache/config.hpp>

#include <filesystem>

namespace jitcache {

std::string describe_dir_size(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (dir.empty() || !fs::exists(dir, ec))
    return "absent";
  std::uint64_t bytes = 0, files = 0;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  if (ec)
    return "unreadable: " + ec.message();
  for (; it != end; it.increment(ec)) {
    if (ec)
      return "unreadable: " + ec.message();
    if (it->is_regular_file(ec)) {
      bytes += it->file_size(ec);
      ++files;
    }
  }
  return format_size(bytes) + " in " + std::to_string(files) + " files";
}

} // namespace jitcache
