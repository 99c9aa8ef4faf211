#pragma once
// A filesystem probe that calls every path NFS: what a cache or a header folder on a network
// filesystem looks like, without mounting one.

#include "core/support/fs_check.hpp"

#include <filesystem>

namespace jitcache::test {

/// A FilesystemProbe that answers NFS (network: true) for any path.
inline detail::Filesystem pretend_nfs(const std::filesystem::path&) {
  return detail::Filesystem{0x6969, "nfs", true};
}

} // namespace jitcache::test
