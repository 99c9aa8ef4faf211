#include "core/tiers/user/deferred_user_tier.hpp"

#include "core/tiers/user/lmdb_env.hpp"
#include "core/tiers/user/use_log.hpp"

#include <utility>

namespace jitcache::detail {

namespace fs = std::filesystem;

DeferredUserTier::DeferredUserTier(fs::path dir, Open open)
    : m_dir(std::move(dir)), m_open(std::move(open)) {}

Expected<std::shared_ptr<UserTier>> DeferredUserTier::tier() const {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_tier)
      return m_tier;
    if (m_tried)
      return m_error;
  }
  // Opened without the lock held: opening can wait (for another process's gate), and a fork()
  // meanwhile must not leave the child a lock that no thread of it will release. Two threads
  // may both open it; the first result is kept (LmdbStore shares one environment per process).
  auto opened = m_open();
  std::lock_guard<std::mutex> lock(m_mutex);
  if (!m_tried) {
    m_tried = true;
    if (opened)
      m_tier = std::move(*opened);
    else
      m_error = std::move(opened).error();
  }
  if (m_tier)
    return m_tier;
  return m_error;
}

Expected<std::shared_ptr<UserTier>> DeferredUserTier::existing() const {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_tier)
      return m_tier;
    if (m_tried)
      return m_error;
  }
  // What counts as a tier to read is what the use log's readers go by (an empty data file, a
  // full disk's leftover, holds nothing: it is made into a tier by the first write only).
  if (!has_data_file(m_dir))
    return std::shared_ptr<UserTier>(); // nothing to read yet; nothing made
  return tier();
}

Expected<void> DeferredUserTier::open() {
  auto tier = this->tier();
  if (!tier)
    return std::move(tier).error();
  return {};
}

bool DeferredUserTier::opened() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_tier != nullptr;
}

bool DeferredUserTier::writable() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_tier ? m_tier->writable() : !m_tried;
}

template <typename R, typename Use> R DeferredUserTier::reading(R nothing, Use use) const {
  auto tier = existing();
  if (!tier)
    return std::move(tier).error();
  return *tier ? use(**tier) : std::move(nothing);
}

template <typename Use>
auto DeferredUserTier::writing(Use use) const -> decltype(use(std::declval<UserTier&>())) {
  auto tier = this->tier();
  if (!tier)
    return std::move(tier).error();
  return use(**tier);
}

Expected<std::optional<Entry>> DeferredUserTier::get(const Digest& key) {
  return reading(Expected<std::optional<Entry>>(std::nullopt),
                 [&](UserTier& tier) { return tier.get(key); });
}

Expected<Store::Visit> DeferredUserTier::visit(const Digest& key,
                                               const std::function<void(const EntryView&)>& use) {
  return reading(Expected<Visit>(Visit::miss()),
                 [&](UserTier& tier) { return tier.visit(key, use); });
}

Expected<void> DeferredUserTier::for_each(const std::function<void(const Item&)>& fn) {
  return reading(Expected<void>(), [&](UserTier& tier) { return tier.for_each(fn); });
}

Expected<bool> DeferredUserTier::visit_record(const Digest& name,
                                              const std::function<void(std::string_view)>& use) {
  return reading(Expected<bool>(false),
                 [&](UserTier& tier) { return tier.visit_record(name, use); });
}

Expected<bool> DeferredUserTier::visit_tuning(const Digest& name,
                                              const std::function<void(std::string_view)>& use) {
  return reading(Expected<bool>(false),
                 [&](UserTier& tier) { return tier.visit_tuning(name, use); });
}

Expected<void>
DeferredUserTier::for_each_tuning(const std::function<void(const Digest&, std::string_view)>& fn) {
  return reading(Expected<void>(), [&](UserTier& tier) { return tier.for_each_tuning(fn); });
}

Expected<Stats> DeferredUserTier::counters() {
  for (int attempt = 0;; ++attempt) {
    auto tier = existing();
    if (!tier)
      return std::move(tier).error();
    if (*tier)
      return (*tier)->counters();
    // Told before there was a data file (told_through_log); unless one was made meanwhile.
    if (auto logged = logged_counters(m_dir); logged || attempt > 0)
      return logged ? *logged : Stats();
  }
}

Expected<bool> DeferredUserTier::remove(const Digest& key) {
  return reading(Expected<bool>(false), [&](UserTier& tier) { return tier.remove(key); });
}

Expected<bool> DeferredUserTier::remove_tuning(const Digest& name) {
  return reading(Expected<bool>(false), [&](UserTier& tier) { return tier.remove_tuning(name); });
}

Expected<void> DeferredUserTier::put(const Digest& key, const Entry& entry) {
  return writing([&](UserTier& tier) { return tier.put(key, entry); });
}

Expected<void> DeferredUserTier::put(const Digest& key, const Entry& entry, const Stats& counters) {
  return writing([&](UserTier& tier) { return tier.put(key, entry, counters); });
}

Expected<void> DeferredUserTier::put_records(const Records& records) {
  return writing([&](UserTier& tier) { return tier.put_records(records); });
}

Expected<void> DeferredUserTier::put_tuning(const Digest& name, std::string_view bytes) {
  return writing([&](UserTier& tier) { return tier.put_tuning(name, bytes); });
}

Expected<void> DeferredUserTier::add_counters(const Stats& delta) {
  if (!opened() && told_through_log(delta))
    return {};
  return writing([&](UserTier& tier) { return tier.add_counters(delta); });
}

bool DeferredUserTier::told_through_log(const Stats& delta) const {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_tried)
      return false;
  }
  bool read_only = false;
  auto cache = prepare_dir(m_dir, read_only); // the tier's folder, made as the tier would make it
  if (!cache || read_only)
    return false;
  // A log due a fold is folded by a teller with the environment open (LmdbStore::add_counters).
  if (const auto log = cache->stat(k_use_log_name);
      log && std::uint64_t(log->st_size) >= k_use_log_fold_at)
    return false;
  return append_use_log(*cache, UseNews{delta, {}}).has_value();
}

Expected<CacheDir> DeferredUserTier::lease_dir() const {
  return writing([&](UserTier& tier) { return tier.lease_dir(); });
}

} // namespace jitcache::detail
