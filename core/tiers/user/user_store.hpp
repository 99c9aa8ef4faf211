#pragma once

#include "core/tiers/user/lmdb_store.hpp"

#include <jitcache/config.hpp>

#include <filesystem>
#include <memory>
#include <variant>

namespace jitcache::detail {

class DeferredUserTier;

/// Where node-local fallback directories are made (see user_store_dir).
inline const std::filesystem::path k_node_local_root = "/tmp";

/// The directory that holds `config`'s user tier: config.cache_dir, or, when that is on a
/// network filesystem (where LMDB must not be opened), the node-local directory
/// `<root>/jitcache-<uid>/<last component of cache_dir>` (e.g. /tmp/jitcache-1000/v1), so that
/// every node keeps its own user tier and format versions stay apart there too.
std::filesystem::path user_store_dir(const Config& config,
                                     FilesystemProbe probe = &probe_filesystem,
                                     const std::filesystem::path& root = k_node_local_root);

/// Opens the user tier of `config` in user_store_dir(config, options.probe, root), with
/// config.max_size as the size limit. A node-local fallback is announced by one warning naming
/// both directories; one that exists but is not this user's alone is refused (anyone could plant
/// binaries there). Errors as LmdbStore::open.
Expected<std::shared_ptr<LmdbStore>>
open_user_store(const Config& config, bool read_only, LmdbStore::Options options = {},
                const std::filesystem::path& root = k_node_local_root);

/// The user tier a Cache uses: when it could be made or written (not read-only, its nearest
/// existing directory writable), a DeferredUserTier that opens it on its first use, or makes it
/// on the first write when it does not exist yet (see core/tiers/user/deferred_user_tier.hpp), so
/// that a request a package serves opens nothing; otherwise open_user_store(config,
/// config.read_only), now. Either way the directory is the one user_store_dir() gives now (its
/// filesystem probed once). Errors as open_user_store, when opened now.
using CacheUserTier = std::variant<std::shared_ptr<LmdbStore>, std::shared_ptr<DeferredUserTier>>;
Expected<CacheUserTier> cache_user_tier(const Config& config);

} // namespace jitcache::detail
