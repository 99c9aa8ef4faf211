#include "tools/jitcache/user_tier.hpp"

#include "core/tiers/user/use_log.hpp"
#include "core/tiers/user/user_store.hpp"

#include <filesystem>

namespace jitcache::cli {

using detail::LmdbStore;
using detail::open_user_store;
using detail::user_store_dir;

bool has_user_tier(const Config& config) {
  return !config.cache_dir.empty() && detail::has_data_file(user_store_dir(config));
}

bool has_use_log(const Config& config) {
  std::error_code ec;
  return !config.cache_dir.empty() &&
         std::filesystem::exists(user_store_dir(config) / detail::k_use_log_name, ec);
}

std::optional<Stats> logged_counters(const Config& config) {
  if (config.cache_dir.empty())
    return Stats();
  return detail::logged_counters(user_store_dir(config));
}

Expected<detail::LoggedDrop> drop_logged_counters(const Config& config) {
  if (config.cache_dir.empty())
    return detail::LoggedDrop::nothing;
  return detail::drop_logged_counters(user_store_dir(config));
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
