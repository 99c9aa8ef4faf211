#pragma once

#include "core/support/clock.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace jitcache::test {

/// A clock the test moves (detail::Clock), installed for the whole process while it lives: the
/// core's leases, back-offs, lock waits and stamp checks read it instead of the real clock. It
/// starts at the real wall-clock time, and both of its clocks move together.
///
/// How a pause of the core (Clock::sleep_for) passes is the test's choice:
/// - Sleep::advances: the pause moves the clock by its length at once, so a wait bounded by a
///   lease or a deadline ends after as many looks as it would take with the real clock, and no
///   real time;
/// - Sleep::waits: the pause ends only when the test has moved the clock past it (advance()),
///   which lets the test put an event between two looks (wait_for_sleepers() tells when a
///   thread is pausing).
class FakeClock final : public detail::Clock {
public:
  enum class Sleep { advances, waits };
  explicit FakeClock(Sleep sleep = Sleep::advances);
  ~FakeClock() override;
  FakeClock(const FakeClock&) = delete;
  FakeClock& operator=(const FakeClock&) = delete;

  std::int64_t steady_ns() override;
  std::int64_t wall_ns() override;
  void sleep_for(std::chrono::nanoseconds pause) override;

  /// Moves the clock on by `by`, waking the pauses that end by then.
  void advance(std::chrono::nanoseconds by);
  /// Waits (for real, at most 60 s) until at least `count` threads are pausing. False on timeout.
  bool wait_for_sleepers(int count);
  /// The time the pauses asked for so far (Sleep::advances: how far they moved the clock).
  std::chrono::nanoseconds slept() const;

private:
  const Sleep m_sleep;
  const std::int64_t m_wall_origin; ///< wall_ns() - steady_ns()
  mutable std::mutex m_mutex;
  std::condition_variable m_changed;
  std::int64_t m_now_ns = 0;
  std::int64_t m_slept_ns = 0;
  int m_sleepers = 0;
  detail::ScopedClock m_installed; ///< last: installed once the rest is ready, removed first
};

/// The real clock, installed for the whole process while it lives, that calls `first_pause` the
/// first time the core pauses (Clock::sleep_for): how a test learns, without sleeping itself,
/// that a process or thread is now waiting for something (a lease another one holds).
class ReportingClock final : public detail::Clock {
public:
  explicit ReportingClock(std::function<void()> first_pause);
  ~ReportingClock() override;
  ReportingClock(const ReportingClock&) = delete;
  ReportingClock& operator=(const ReportingClock&) = delete;

  std::int64_t steady_ns() override { return detail::real_clock().steady_ns(); }
  std::int64_t wall_ns() override { return detail::real_clock().wall_ns(); }
  void sleep_for(std::chrono::nanoseconds pause) override;

private:
  std::function<void()> m_first_pause;
  std::once_flag m_reported;
  detail::ScopedClock m_installed; ///< last: installed once the rest is ready, removed first
};

} // namespace jitcache::test
