#pragma once

#include <string>

namespace jitcache {

/// "12.3 MiB in 42 files", "absent" or "unreadable: <reason>" for the tree at `dir`. Never
/// fails; symlinks are not followed. For `jitcache info`'s report of the runtimes' own caches.
std::string describe_dir_size(const std::string& dir);

} // namespace jitcache
