#pragma once

#include "core/tiers/user/user_tier.hpp"

#include <jitcache/store.hpp>

#include <memory>
#include <string>

namespace jitcache::detail {

/// Any tier, read-only (JITCACHE_READONLY; sccache's ReadOnlyStorage is the model): reads are
/// the wrapped tier's, answered as it answers them; writes and removals are refused with
/// read_only and never reach it, so no path of the core needs to ask whether it may write.
/// Thread-safe as the wrapped tier is.
class ReadOnlyStore final : public Store {
public:
  explicit ReadOnlyStore(std::shared_ptr<Store> inner) : m_inner(std::move(inner)) {}

  std::string name() const override { return m_inner->name(); }
  /// False: put() and remove() always fail.
  bool writable() const override { return false; }
  Expected<std::optional<Entry>> get(const Digest& key) override { return m_inner->get(key); }
  Expected<Visit> visit(const Digest& key,
                        const std::function<void(const EntryView&)>& use) override {
    return m_inner->visit(key, use);
  }
  /// Errors: read_only, always.
  Expected<void> put(const Digest& key, const Entry& entry) override;
  /// Errors: read_only, always.
  Expected<bool> remove(const Digest& key) override;
  Expected<void> for_each(const std::function<void(const Item&)>& fn) override {
    return m_inner->for_each(fn);
  }

private:
  std::shared_ptr<Store> m_inner;
};

/// ReadOnlyStore for the user tier: its records, tuning records and counters are read as the
/// wrapped tier reads them; every write (entries, records, tuning records, counters) and removal
/// is refused with read_only. lease_dir() is the wrapped tier's (no lease is taken on a tier
/// that is not written). Thread-safe as the wrapped tier is.
class ReadOnlyUserTier final : public UserTier {
public:
  explicit ReadOnlyUserTier(std::shared_ptr<UserTier> inner) : m_inner(std::move(inner)) {}

  std::string name() const override { return m_inner->name(); }
  /// False: every write fails.
  bool writable() const override { return false; }
  Expected<std::optional<Entry>> get(const Digest& key) override { return m_inner->get(key); }
  Expected<Visit> visit(const Digest& key,
                        const std::function<void(const EntryView&)>& use) override {
    return m_inner->visit(key, use);
  }
  Expected<void> for_each(const std::function<void(const Item&)>& fn) override {
    return m_inner->for_each(fn);
  }
  Expected<bool> visit_record(const Digest& name,
                              const std::function<void(std::string_view)>& use) override {
    return m_inner->visit_record(name, use);
  }
  Expected<bool> visit_tuning(const Digest& name,
                              const std::function<void(std::string_view)>& use) override {
    return m_inner->visit_tuning(name, use);
  }
  Expected<void>
  for_each_tuning(const std::function<void(const Digest&, std::string_view)>& fn) override {
    return m_inner->for_each_tuning(fn);
  }
  Expected<Stats> counters() override { return m_inner->counters(); }
  Expected<CacheDir> lease_dir() const override { return m_inner->lease_dir(); }

  /// Errors: read_only, always (as every write below).
  Expected<void> put(const Digest& key, const Entry& entry) override;
  Expected<void> put(const Digest& key, const Entry& entry, const Stats& counters) override;
  Expected<bool> remove(const Digest& key) override;
  Expected<void> put_records(const Records& records) override;
  Expected<void> put_tuning(const Digest& name, std::string_view bytes) override;
  Expected<bool> remove_tuning(const Digest& name) override;
  Expected<void> add_counters(const Stats& delta) override;

private:
  std::shared_ptr<UserTier> m_inner;
};

} // namespace jitcache::detail
