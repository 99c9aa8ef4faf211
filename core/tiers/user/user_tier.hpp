#pragma once

#include "core/tiers/user/cache_dir.hpp"

#include <jitcache/stats.hpp>
#include <jitcache/store.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace jitcache::detail {

/// Records to store (see UserTier::put_records), by name.
using Records = std::map<Digest, std::string>;

/// Everything the core needs of the user tier, beyond a Store's entries: entries stored with
/// the counters of the compile that made them, records (manifests, remembered identities),
/// persistent counters, and where compile leases live. LmdbStore is the implementation; a test
/// wraps it (tests/support/faulty_user_tier.hpp) to fail any one operation, so every step of
/// the hit and miss paths can be made to fail. Implementations are thread-safe.
class UserTier : public Store {
public:
  /// Like put(), and adds `counters` in the same write: the entry and its counters are stored
  /// together or not at all. Errors as put().
  virtual Expected<void> put(const Digest& key, const Entry& entry, const Stats& counters) = 0;
  using Store::put;

  /// Runs `use` on the record `name`'s bytes in place and says whether there was one. Records
  /// are small values beside the entries that speed up finding them; they are not entries (not
  /// listed, counted or size-limited). `use` must not call this tier.
  virtual Expected<bool> visit_record(const Digest& name,
                                      const std::function<void(std::string_view)>& use) = 0;
  /// Stores each (name, bytes) of `records` as the record `name`, replacing it, in one write:
  /// all of them or none. Errors as put().
  virtual Expected<void> put_records(const Records& records) = 0;

  /// Tuning records (core/tuning/tuning_record.hpp), in a database of their own: unlike records
  /// they are listed, never dropped to make room, and removed only by remove_tuning() and clearing.
  /// Runs `use` on the bytes stored under `name`, in place and unverified (`use` verifies
  /// them, and must not call this tier), and says whether there were any. Errors as visit().
  virtual Expected<bool> visit_tuning(const Digest& name,
                                      const std::function<void(std::string_view)>& use) = 0;
  /// Stores `bytes` as the tuning record `name`, replacing it. Errors as put().
  virtual Expected<void> put_tuning(const Digest& name, std::string_view bytes) = 0;
  /// Removes the tuning record `name`; says whether there was one. Errors as remove().
  virtual Expected<bool> remove_tuning(const Digest& name) = 0;
  /// Calls `fn(name, bytes)` for every tuning record, in name order, inside one read
  /// transaction (bytes unverified and valid during the call only; `fn` must not call this
  /// tier). Errors as for_each().
  virtual Expected<void>
  for_each_tuning(const std::function<void(const Digest&, std::string_view)>& fn) = 0;

  /// Adds `delta` to the counters kept in the tier (and writes the uses recorded since the last
  /// write). Errors as put().
  virtual Expected<void> add_counters(const Stats& delta) = 0;
  /// The counters kept in the tier.
  virtual Expected<Stats> counters() = 0;

  /// The directory compile leases are taken in (see CompileLease), opened (made first when
  /// absent). Errors: io_error when it cannot be made or opened (a symbolic link there, ...).
  virtual Expected<CacheDir> lease_dir() const = 0;
};

} // namespace jitcache::detail
