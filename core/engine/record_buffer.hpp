#pragma once

#include "core/engine/tier_set.hpp"
#include "core/tiers/user/user_tier.hpp"

#include <jitcache/stats.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace jitcache::detail {

/// What a cache holds for the user tier until it writes it in one go: the records it remembered
/// (see CacheCore::remember) and the counters it counted, with the counters of the whole
/// session. Writing at flush (or once the records reach k_unsaved_record_bytes) keeps synced
/// writes off the requests' path. Thread-safe: one mutex guards all of it, held for no other
/// call.
class RecordBuffer {
public:
  /// Remembered records held unwritten are written in the background once they reach this
  /// size.
  static constexpr std::size_t k_unsaved_record_bytes = 4 << 20;

  /// Writes go to `tiers`' user tier; `make_user_tier` makes it first when its making was
  /// deferred, and says whether it is usable (see CacheCore). Both outlive this buffer.
  RecordBuffer(const TierSet& tiers, std::function<bool()> make_user_tier);

  /// Counts `amount` of `counter` for `backend` (session and user tier).
  void count(const std::string& backend, Counter counter, std::uint64_t amount = 1);
  /// Counts a hit of `backend` from `tier`.
  void count_hits(const std::string& backend, const std::string& tier);
  /// Counts in the session alone: for a count written to the user tier with something else
  /// (a compile's, with its entry).
  void count_in_session(const std::string& backend, Counter counter);
  /// Counts for the user tier alone: for a count already in the session whose other write did
  /// not happen.
  void count_unsaved(const std::string& backend, Counter counter);
  /// The counters since creation.
  Stats session_stats() const;

  /// The encoded record held unwritten under `name`, a copy; nullopt when none is.
  std::optional<std::string> unsaved(const Digest& name) const;
  /// Holds `bytes` (an encoded record) under `name`, replacing one held. Returns every record
  /// held, no longer held, once they reach k_unsaved_record_bytes (the caller writes them,
  /// write_records()); none otherwise.
  Records hold(const Digest& name, std::string bytes);

  /// Writes the remembered records and the counters not written yet to the user tier.
  void flush_unsaved();
  /// Writes `records` to the user tier (made first when its making was deferred), in one write;
  /// a failure is one warning per error.
  void write_records(const Records& records);

private:
  const TierSet& m_tiers;
  const std::function<bool()> m_make_user_tier;

  mutable std::mutex m_stats_mutex;
  Stats m_session;                        ///< since creation
  Stats m_unsaved;                        ///< not yet written to the user tier
  Records m_unsaved_records;              ///< remembered, not yet written to the user tier
  std::size_t m_unsaved_record_bytes = 0; ///< the encoded size of those
};

} // namespace jitcache::detail
