#include "core/tiers/user/user_store.hpp"

#include "core/support/log.hpp"
#include "core/tiers/user/deferred_user_tier.hpp"

#include <sys/stat.h>
#include <unistd.h>

namespace jitcache::detail {

namespace fs = std::filesystem;

namespace {

// Where `config`'s user tier is (user_store_dir), and what the one probe of its directory said.
struct TierPlace {
  fs::path dir;
  Filesystem cache_dir_filesystem; ///< config.cache_dir's; not network: `dir` is cache_dir
};

TierPlace tier_place(const Config& config, FilesystemProbe probe, const fs::path& root) {
  const Filesystem where = probe(config.cache_dir);
  if (!where.network)
    return {config.cache_dir, where};
  return {root / ("jitcache-" + std::to_string(::geteuid())) / config.cache_dir.filename(), where};
}

// open_user_store() in `place`, found for `config` by tier_place().
Expected<std::shared_ptr<LmdbStore>> open_tier_at(const Config& config, const TierPlace& place,
                                                  bool read_only, LmdbStore::Options options) {
  options.max_size = config.max_size;
  const fs::path& dir = place.dir;
  if (!place.cache_dir_filesystem.network) {
    options.probed_local = true; // probed just now: once is enough
  } else {
    log::write_once(LogLevel::warn, "node-local:" + config.cache_dir.string(),
                    "cache directory " + config.cache_dir.string() +
                        " is on a network filesystem (" + place.cache_dir_filesystem.name +
                        "), where LMDB's locking is unsafe; using the node-local directory " +
                        dir.string() + " instead (set JITCACHE_DIR to choose another)");
    if (!read_only) { // private before LmdbStore::open makes anything inside it
      std::error_code ec;
      const mode_t old_mask = ::umask(077);
      fs::create_directories(dir.parent_path(), ec);
      ::umask(old_mask);
    }
    if (auto problem = foreign_directory_problem(dir.parent_path()))
      return Error(ErrorCode::io_error,
                   "node-local directory " + dir.parent_path().string() + " is " + *problem);
  }
  return LmdbStore::open(dir, read_only, options);
}

} // namespace

fs::path user_store_dir(const Config& config, FilesystemProbe probe, const fs::path& root) {
  return tier_place(config, probe, root).dir;
}

Expected<std::shared_ptr<LmdbStore>> open_user_store(const Config& config, bool read_only,
                                                     LmdbStore::Options options,
                                                     const fs::path& root) {
  return open_tier_at(config, tier_place(config, options.probe, root), read_only,
                      std::move(options));
}

Expected<CacheUserTier> cache_user_tier(const Config& config) {
  // One probe: the tier is opened (at its first use) where it was found now.
  const TierPlace place = tier_place(config, &probe_filesystem, k_node_local_root);
  const fs::path& dir = place.dir;
  std::error_code ec;
  fs::path existing = dir;
  while (!fs::exists(existing, ec) && existing.has_relative_path())
    existing = existing.parent_path();
  // Opened (or made) by the first use, made or not: a request a package serves needs nothing of
  // the user tier, and opening an LMDB environment costs a package hit as much as the rest of it.
  if (!config.read_only && ::access(existing.c_str(), W_OK) == 0)
    return CacheUserTier(std::make_shared<DeferredUserTier>(
        dir, [config, place]() -> Expected<std::shared_ptr<UserTier>> {
          auto opened = open_tier_at(config, place, false, {});
          if (!opened)
            return std::move(opened).error();
          return std::shared_ptr<UserTier>(std::move(*opened));
        }));
  auto opened = open_tier_at(config, place, config.read_only, {});
  if (!opened)
    return std::move(opened).error();
  return CacheUserTier(std::move(*opened));
}

} // namespace jitcache::detail
