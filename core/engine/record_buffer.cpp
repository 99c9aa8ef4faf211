#include "core/engine/record_buffer.hpp"

#include "core/support/log.hpp"
#include "core/tiers/user/deferred_user_tier.hpp"

namespace jitcache::detail {

RecordBuffer::RecordBuffer(const TierSet& tiers, std::function<bool()> make_user_tier)
    : m_tiers(tiers), m_make_user_tier(std::move(make_user_tier)) {}

void RecordBuffer::count(const std::string& backend, Counter counter, std::uint64_t amount) {
  std::lock_guard<std::mutex> lock(m_stats_mutex);
  m_session.add(backend, counter, amount);
  m_unsaved.add(backend, counter, amount);
}

void RecordBuffer::count_hits(const std::string& backend, const std::string& tier) {
  std::lock_guard<std::mutex> lock(m_stats_mutex);
  m_session.add_hits(backend, tier);
  m_unsaved.add_hits(backend, tier);
}

void RecordBuffer::count_in_session(const std::string& backend, Counter counter) {
  std::lock_guard<std::mutex> lock(m_stats_mutex);
  m_session.add(backend, counter);
}

void RecordBuffer::count_unsaved(const std::string& backend, Counter counter) {
  std::lock_guard<std::mutex> lock(m_stats_mutex);
  m_unsaved.add(backend, counter);
}

Stats RecordBuffer::session_stats() const {
  std::lock_guard<std::mutex> lock(m_stats_mutex);
  return m_session;
}

std::optional<std::string> RecordBuffer::unsaved(const Digest& name) const {
  std::lock_guard<std::mutex> lock(m_stats_mutex);
  if (auto it = m_unsaved_records.find(name); it != m_unsaved_records.end())
    return it->second;
  return std::nullopt;
}

Records RecordBuffer::hold(const Digest& name, std::string bytes) {
  Records full;
  std::lock_guard<std::mutex> lock(m_stats_mutex);
  std::string& held = m_unsaved_records[name];
  m_unsaved_record_bytes = m_unsaved_record_bytes - held.size() + bytes.size();
  held = std::move(bytes);
  if (m_unsaved_record_bytes < k_unsaved_record_bytes)
    return full;
  std::swap(full, m_unsaved_records);
  m_unsaved_record_bytes = 0;
  return full;
}

void RecordBuffer::write_records(const Records& records) {
  if (records.empty() || !m_make_user_tier())
    return;
  // Keyed like write()'s warning: a full or failing disk is one warning, not one per write.
  if (auto ok = m_tiers.user()->put_records(records); !ok)
    log::write_once(LogLevel::warn, "put:" + m_tiers.user()->name() + to_string(ok.error().code),
                    "could not remember records: " + ok.error().message);
}

void RecordBuffer::flush_unsaved() {
  Stats pending;
  Records records;
  {
    std::lock_guard<std::mutex> lock(m_stats_mutex);
    std::swap(pending, m_unsaved);
    std::swap(records, m_unsaved_records);
    m_unsaved_record_bytes = 0;
  }
  // Also writes the uses recorded on hits (nothing at all when there is nothing to write).
  if (!m_tiers.user() || m_tiers.user_tier()->dead || !m_tiers.user()->writable())
    return;
  write_records(records);
  // A tier not made yet has no uses to write; its counters go to its use log, with no
  // environment made or opened (DeferredUserTier::add_counters).
  if (m_tiers.deferred() && !m_tiers.deferred()->opened() && pending.by_backend.empty())
    return;
  // Keyed like write()'s warning: a full or failing disk is one warning, not one per write.
  if (auto ok = m_tiers.user()->add_counters(pending); !ok)
    log::write_once(LogLevel::warn, "put:" + m_tiers.user()->name() + to_string(ok.error().code),
                    "could not save counters: " + ok.error().message);
}

} // namespace jitcache::detail
