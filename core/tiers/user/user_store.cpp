#include "core/tiers/user/user_store.hpp"

#include "core/support/log.hpp"
#include "core/tiers/user/deferred_user_tier.hpp"

#include <sys/stat.h>
#include <unistd.h>

namespace jitcache::detail {

namespace fs = std::filesystem;

fs::path user_store_dir(const Config& config, FilesystemProbe probe, const fs::path& root) {
  if (!probe(config.cache_dir).network)
    return config.cache_dir;
  return root / ("jitcache-" + std::to_string(::geteuid())) / config.cache_dir.filename();
}

Expected<std::shared_ptr<LmdbStore>> open_user_store(const Config& config, bool read_only,
                                                     LmdbStore::Options options,
                                                     const fs::path& root) {
  options.max_size = config.max_size;
  const fs::path dir = user_store_dir(config, options.probe, root);
  if (dir != config.cache_dir) {
    log::write_once(LogLevel::warn, "node-local:" + config.cache_dir.string(),
                    "cache directory " + config.cache_dir.string() +
                        " is on a network filesystem (" + options.probe(config.cache_dir).name +
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

Expected<CacheUserTier> cache_user_tier(const Config& config) {
  const fs::path dir = user_store_dir(config);
  std::error_code ec;
  fs::path existing = dir;
  while (!fs::exists(existing, ec) && existing.has_relative_path())
    existing = existing.parent_path();
  // Opened (or made) by the first use, made or not: a request a package serves needs nothing of
  // the user tier, and opening an LMDB environment costs a package hit as much as the rest of it.
  if (!config.read_only && ::access(existing.c_str(), W_OK) == 0)
    return CacheUserTier(
        std::make_shared<DeferredUserTier>(dir, [config]() -> Expected<std::shared_ptr<UserTier>> {
          auto opened = open_user_store(config, false);
          if (!opened)
            return std::move(opened).error();
          return std::shared_ptr<UserTier>(std::move(*opened));
        }));
  auto opened = open_user_store(config, config.read_only);
  if (!opened)
    return std::move(opened).error();
  return CacheUserTier(std::move(*opened));
}

} // namespace jitcache::detail
