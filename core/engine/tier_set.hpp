#pragma once

#include "core/tiers/user/user_tier.hpp"

#include <jitcache/config.hpp>
#include <jitcache/store.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace jitcache::detail {

class DeferredUserTier;
class MemoryStore;
class PackageStore;
class RemoteStore;

/// One tier of a cache, with its role and what the core keeps about it.
struct Tier {
  std::shared_ptr<Store> store; ///< what is read and written (a ReadOnlyStore when read-only)
  bool persistent = true;       ///< false for the memory tier only
  std::shared_ptr<PackageStore> packages; ///< set for a tier of packages (the unwrapped one)
  std::shared_ptr<RemoteStore> remote;    ///< set for a remote tier (the unwrapped one)
  std::atomic<bool> dead{false};          ///< failed: skipped for the rest of the process
  /// A remote tier that failed is skipped until then (steady clock, ns), then tried again.
  std::atomic<std::int64_t> down_until_ns{0};
};

/// The tiers of a cache in lookup order, each with the role its maker gave it: the user tier
/// (counters, records, leases), tiers of packages (told of each lookup, asked for their
/// toolchains), remote tiers (back-off, fleet leases), and tiers with no role of their own (a
/// Store an embedder brings). Roles are said once, when the set is made, never rediscovered.
/// Made before the cache, then read only: the Tier records' atomics are the only state that
/// changes, so any number of threads may read it.
class TierSet {
public:
  /// The persistent tiers `config` names, in lookup order: the embedded packages, the system
  /// packages (JITCACHE_SYSTEM_PATH; a tier of packages only when it has one), the user tier
  /// (cache_user_tier; one that cannot be opened is one warning and left out), then a remote tier
  /// per URL of config.remote. None when every backend's persistent tiers are off.
  static TierSet of_config(const Config& config);
  /// `stores` in order, none with a role.
  static TierSet of_stores(std::vector<std::shared_ptr<Store>> stores);
  /// `user` alone, as the user tier.
  static TierSet of_user(std::shared_ptr<UserTier> user);

  /// Each adds a tier after those added so far.
  TierSet& add_packages(std::shared_ptr<PackageStore> packages);
  /// The user tier; a second one is a tier with no role (as add()).
  TierSet& add_user(std::shared_ptr<UserTier> user);
  /// A user tier made on its first write (see DeferredUserTier).
  TierSet& add_user(std::shared_ptr<DeferredUserTier> user);
  TierSet& add_remote(std::shared_ptr<RemoteStore> remote);
  /// A tier with no role of its own.
  TierSet& add(std::shared_ptr<Store> store);
  /// Puts `memory` first, as the one tier that is not persistent.
  void add_memory_first(std::shared_ptr<MemoryStore> memory);

  /// Every persistent tier read-only (JITCACHE_READONLY): wrapped in ReadOnlyStore (the user
  /// tier in ReadOnlyUserTier), and a user tier made on its first write is never made.
  void make_read_only();

  /// Every tier, in lookup order.
  const std::vector<std::unique_ptr<Tier>>& all() const { return m_all; }
  /// The user tier's record, and the tier as a UserTier: null when there is none.
  Tier* user_tier() const { return m_user_tier; }
  const std::shared_ptr<UserTier>& user() const { return m_user; }
  /// The user tier when it is made on its first write; null otherwise.
  DeferredUserTier* deferred() const { return m_deferred.get(); }
  /// The tiers of packages and the remote tiers, in lookup order.
  const std::vector<Tier*>& packages() const { return m_packages; }
  const std::vector<Tier*>& remotes() const { return m_remotes; }
  /// The stores, in lookup order.
  std::vector<std::shared_ptr<Store>> stores() const;

private:
  Tier& push(std::shared_ptr<Store> store);

  std::vector<std::unique_ptr<Tier>> m_all;
  Tier* m_user_tier = nullptr;
  std::shared_ptr<UserTier> m_user;
  std::shared_ptr<DeferredUserTier> m_deferred;
  std::vector<Tier*> m_packages;
  std::vector<Tier*> m_remotes;
};

} // namespace jitcache::detail
