#pragma once

#include "core/tiers/user/cache_dir.hpp"

#include <jitcache/tuning.hpp>

#include <mutex>
#include <optional>

namespace jitcache::detail {

/// The right to time runs on a device, held for its lifetime: one holder at a time across
/// processes and threads, so that tunings of different problems at once (`jitcache tune
/// --jobs`, or an application's threads) overlap their compiles but never their timed runs.
/// It is an flock on `measure-<digest of the device's fields>` in `leases` (the user tier's
/// leases/), on a descriptor of its own, so that threads exclude each other too; without
/// `leases`, or when that file cannot be opened, a process-wide mutex. The kernel drops the lock
/// of a process that dies. Waits as long as the holder holds it. A child forked while it is held
/// (by code that the timed runs call) neither keeps it nor lets it go for the parent.
class MeasuringLock {
public:
  MeasuringLock(const std::optional<CacheDir>& leases, const tuning::Device& device);
  ~MeasuringLock();
  MeasuringLock(const MeasuringLock&) = delete;
  MeasuringLock& operator=(const MeasuringLock&) = delete;

private:
  int m_fd = -1;
  unsigned m_generation = 0; ///< the fork generation that took it
  std::unique_lock<std::mutex> m_held;
};

} // namespace jitcache::detail
