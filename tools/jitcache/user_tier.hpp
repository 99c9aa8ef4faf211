#pragma once

#include "core/tiers/user/lmdb_store.hpp"
#include "core/tiers/user/use_log.hpp"

#include <jitcache/config.hpp>

#include <memory>
#include <optional>

namespace jitcache::cli {

/// Whether `config` has a user tier to look at: a data file that is not empty (one a full disk
/// left empty holds nothing). Never creates anything.
bool has_user_tier(const Config& config);

/// Opens the user tier of `config` for inspection (`write` false: never creates anything) or
/// for changes. Returns nullptr, not an error, when there is no user tier yet and `write` is
/// false: an absent cache is an empty one. Errors: io_error/read_only with the reason.
Expected<std::shared_ptr<detail::LmdbStore>> open_user_tier(const Config& config, bool write);

/// Whether `config`'s user tier folder holds a use log. Never creates anything.
bool has_use_log(const Config& config);

/// The counters of a user tier that has no data file yet, from its use log (a process whose
/// requests packages served told them there); empty when there are none; nullopt when the tier
/// has a data file by the time the log was read (detail::logged_counters): read the tier.
std::optional<Stats> logged_counters(const Config& config);

/// Drops what the use log of a user tier with no data file holds (its counters), as zeroing or
/// clearing the tier would; says what it did (LoggedDrop::tier: the tier has a data file now,
/// which the caller changes instead). Errors: detail::drop_logged_counters's.
Expected<detail::LoggedDrop> drop_logged_counters(const Config& config);

/// Whether `config` lets a command change the user tier. Errors: invalid_argument (no cache
/// directory), read_only (JITCACHE_READONLY).
Expected<void> may_change(const Config& config);

} // namespace jitcache::cli
