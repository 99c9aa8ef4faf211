#pragma once

#include "core/key/file_stamp.hpp"

#include <cstdint>

namespace jitcache::test {

/// A clock for file stamps (CacheCore::set_stamp_clock) that stands still where the test puts
/// it, so that whether a stamp can vouch for its file never depends on how fast the test runs.
/// One per process (a StampClock is a plain function pointer): now() reads what the last
/// settle() or stop() set.
class FakeStampClock {
public:
  /// Stopped at the real time now.
  FakeStampClock() { stop(); }
  /// Every file written before this call can vouch for its content (the clock stands 3 s past the
  /// real time).
  void settle();
  /// Stops the clock at the real time now: every file written from now on is too recent to vouch
  /// for its content, however long the test takes.
  void stop();
  /// What the clock reads.
  static std::int64_t now();
  /// For CacheCore::set_stamp_clock.
  static detail::StampClock clock() { return &now; }
};

} // namespace jitcache::test
