#include "core/engine/tier_set.hpp"

#include "core/support/log.hpp"
#include "core/tiers/memory_store.hpp"
#include "core/tiers/packages/embedded_packages.hpp"
#include "core/tiers/packages/package_store.hpp"
#include "core/tiers/read_only_store.hpp"
#include "core/tiers/remote/redis_url.hpp"
#include "core/tiers/remote/remote_store.hpp"
#include "core/tiers/user/deferred_user_tier.hpp"
#include "core/tiers/user/user_store.hpp"

#include <algorithm>
#include <iterator>

namespace jitcache::detail {

TierSet TierSet::of_config(const Config& config) {
  TierSet set;
  const auto on = [&](const char* b) { return config.persistence(b).enabled; };
  const bool any_persistent = std::any_of(std::begin(k_backends), std::end(k_backends), on) ||
                              std::any_of(std::begin(k_front_ends), std::end(k_front_ends), on);
  if (!any_persistent)
    return set;
  // Lookup order (README "Packages"): a package hit is a binary search in memory already
  // mapped, cheaper than the user tier's read transaction, and embedded packages need no
  // file at all; the three hold the same binary for a key.
  for (auto packages : {PackageStore::open_embedded(embedded_packages()),
                        PackageStore::open_system(config.system_path, config.system_path_default)})
    if (!packages->packages().empty())
      set.add_packages(std::move(packages));
  auto user = cache_user_tier(config);
  if (user)
    std::visit([&](auto& tier) { set.add_user(std::move(tier)); }, *user);
  else
    log::write_once(LogLevel::warn, "user:" + user.error().message,
                    user.error().message + "; continuing without the user tier");
  std::vector<std::string> complaints; // config.remote holds only the URLs that parsed
  for (RedisUrl& url : parse_redis_urls(config.remote, complaints))
    set.add_remote(std::make_shared<RemoteStore>(std::move(url), config.remote_key));
  return set;
}

TierSet TierSet::of_stores(std::vector<std::shared_ptr<Store>> stores) {
  TierSet set;
  for (auto& store : stores)
    set.add(std::move(store));
  return set;
}

TierSet TierSet::of_user(std::shared_ptr<UserTier> user) {
  TierSet set;
  set.add_user(std::move(user));
  return set;
}

Tier& TierSet::push(std::shared_ptr<Store> store) {
  m_all.push_back(std::make_unique<Tier>());
  m_all.back()->store = std::move(store);
  return *m_all.back();
}

TierSet& TierSet::add_packages(std::shared_ptr<PackageStore> packages) {
  Tier& tier = push(packages);
  tier.packages = std::move(packages);
  m_packages.push_back(&tier);
  return *this;
}

TierSet& TierSet::add_user(std::shared_ptr<UserTier> user) {
  if (m_user)
    return add(std::move(user));
  m_user_tier = &push(user);
  m_user = std::move(user);
  return *this;
}

TierSet& TierSet::add_user(std::shared_ptr<DeferredUserTier> user) {
  const bool first = !m_user;
  add_user(std::shared_ptr<UserTier>(user));
  if (first)
    m_deferred = std::move(user);
  return *this;
}

TierSet& TierSet::add_remote(std::shared_ptr<RemoteStore> remote) {
  Tier& tier = push(remote);
  tier.remote = std::move(remote);
  m_remotes.push_back(&tier);
  return *this;
}

TierSet& TierSet::add(std::shared_ptr<Store> store) {
  push(std::move(store));
  return *this;
}

void TierSet::add_memory_first(std::shared_ptr<MemoryStore> memory) {
  auto tier = std::make_unique<Tier>();
  tier->store = std::move(memory);
  tier->persistent = false;
  m_all.insert(m_all.begin(), std::move(tier));
}

void TierSet::make_read_only() {
  for (auto& tier : m_all) {
    if (!tier->persistent)
      continue;
    if (tier.get() == m_user_tier) {
      m_user = std::make_shared<ReadOnlyUserTier>(std::move(m_user));
      tier->store = m_user;
    } else {
      tier->store = std::make_shared<ReadOnlyStore>(std::move(tier->store));
    }
  }
  m_deferred.reset(); // reads look for a tier another process made; nothing makes one
}

std::vector<std::shared_ptr<Store>> TierSet::stores() const {
  std::vector<std::shared_ptr<Store>> out;
  for (const auto& tier : m_all)
    out.push_back(tier->store);
  return out;
}

} // namespace jitcache::detail
