#include "core/tiers/user/dir_size.hpp"

#include <jitcache/config.hpp>

#include <filesystem>

namespace jitcache::detail {

DirUsage dir_usage(const std::string& dir) {
  namespace fs = std::filesystem;
  DirUsage usage;
  std::error_code ec;
  if (dir.empty() || !fs::exists(fs::symlink_status(dir, ec)))
    return usage;
  usage.present = true;
  if (fs::is_symlink(fs::symlink_status(dir, ec)))
    return usage;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  if (ec) {
    usage.error = ec.message();
    return usage;
  }
  for (; it != end; it.increment(ec)) {
    if (ec) {
      usage.error = ec.message();
      return usage;
    }
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) {
      usage.bytes += it->file_size(ec);
      ++usage.files;
    }
  }
  return usage;
}

std::string describe_dir_size(const std::string& dir) {
  const DirUsage usage = dir_usage(dir);
  if (!usage.present)
    return "absent";
  if (!usage.error.empty())
    return "unreadable: " + usage.error;
  return format_size(usage.bytes) + " in " + std::to_string(usage.files) + " files";
}

} // namespace jitcache::detail
