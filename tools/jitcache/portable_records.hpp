#pragma once

#include "core/tiers/packages/package_format.hpp"
#include "core/tiers/user/lmdb_store.hpp"

#include <jitcache/digest.hpp>

#include <set>
#include <string>
#include <vector>

namespace jitcache::cli {

/// What portable_records() found.
struct PortableRecords {
  std::vector<detail::PackageRecord> records; ///< by the name the key is remembered under
  std::size_t vouched = 0; ///< files of theirs a package manager's record vouches for
  std::size_t hashed = 0;  ///< files of theirs another machine reads to prove them
  std::size_t stale = 0;   ///< remembered keys whose files changed since (not exported)
};

/// The portable manifests (core/key/portable_manifest.hpp) of the keys `store` remembers for
/// `backend` whose digests are in `keys` and whose files are unchanged since they were read:
/// what a package carries so that another machine takes those keys without reading the
/// toolkit's headers. A remembered key without the paths of its files (remembered by an older
/// jitcache, or built from a folder's listing) has none. Errors: the store's.
Expected<PortableRecords> portable_records(detail::LmdbStore& store, const std::string& backend,
                                           const std::set<Digest>& keys);

} // namespace jitcache::cli
