#include "tools/jitcache/user_tier.hpp"

#include "core/tiers/user/use_log.hpp"
#include "core/tiers/user/user_store.hpp"

#include <filesystem>

namespace jitcache::cli {

using detail::LmdbStore;
using detail::open_user_store;
using detail::user_store_dir;

bool has_user_tier(const Config& config) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(user_store_dir(config) / "data.mdb", ec);
  return !config.cache_dir.empty() && !ec && size > 0;
}

Stats logged_counters(const Config& config) {
  if (config.cache_dir.empty())
    return {};
  return detail::logged_counters(user_store_dir(config));
}

void drop_logged_counters(const Config& config) {
  std::error_code ec;
  const std::filesystem::path dir = user_store_dir(config);
  if (config.cache_dir.empty() || !std::filesystem::exists(dir / detail::k_use_log_name, ec))
    return;
  if (auto cache = detail::CacheDir::open(dir))
    detail::TakenUseLog::take(*cache).remove();
}

Expected<void> may_change(const Config& config) {
  if (config.cache_dir.empty())
    return Error(ErrorCode::invalid_argument,
                 "no cache directory: set JITCACHE_DIR (or HOME/XDG_CACHE_HOME)");
  if (config.read_only)
    return Error(ErrorCode::read_only, "JITCACHE_READONLY is set; nothing may be changed");
  return {};
}

Expected<std::shared_ptr<LmdbStore>> open_user_tier(const Config& config, bool write) {
  // Reading needs a directory only; changing also needs JITCACHE_READONLY unset.
  if (auto ok = may_change(config);
      !ok && (write || ok.error().code == ErrorCode::invalid_argument))
    return std::move(ok).error();
  if (!write && !has_user_tier(config))
    return std::shared_ptr<LmdbStore>();
  auto store = open_user_store(config, !write);
  if (!store)
    return std::move(store).error();
  if (write && !(*store)->writable())
    return Error(ErrorCode::read_only, "user tier " + (*store)->dir().string() + " is read-only");
  return store;
}

} // namespace jitcache::cli
