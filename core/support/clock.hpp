#pragma once

#include <chrono>
#include <cstdint>

namespace jitcache::detail {

/// Monotonic stopwatch for the timings reported in BuildInfo. It reads the real clock, never the
/// injected one (detail::clock()): it measures, and decides nothing.
class Stopwatch {
public:
  Stopwatch() : m_start(std::chrono::steady_clock::now()) {}
  double ms() const { return std::chrono::duration<double, std::milli>(elapsed()).count(); }
  std::uint64_t ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed()).count();
  }

private:
  std::chrono::steady_clock::duration elapsed() const {
    return std::chrono::steady_clock::now() - m_start;
  }
  std::chrono::steady_clock::time_point m_start;
};

/// Where every decision of the core that depends on time reads it: compile lease expiry and the
/// waits for a lease, the remote tier's back-off, whether a file stamp is too recent to vouch,
/// the waits for a record's or a gate's lock, the last-use times that eviction orders by, the
/// access log's age, the tuner's timings, `store --wait`'s limit. The process reads the real
/// clock (real_clock()) unless a test installs another one (ScopedClock), which lets a test make
/// an hour pass without waiting for it, or learn when a thread starts to wait.
///
/// The real clock stays where time is not the core's to decide: waits on real I/O (poll on a
/// socket, a child process's exit: a fake clock cannot make a peer answer sooner), the renewal
/// of a remote lease (the server expires it in its own real time), and Stopwatch's
/// measurements (reported, never acted on).
class Clock {
public:
  virtual ~Clock() = default;
  /// Monotonic time, in nanoseconds from an arbitrary origin fixed for the process.
  virtual std::int64_t steady_ns() = 0;
  /// Wall-clock time (CLOCK_REALTIME: what file timestamps and other processes' lease records
  /// are taken from), in nanoseconds since the epoch.
  virtual std::int64_t wall_ns() = 0;
  /// Pauses the calling thread for `pause` of this clock's time (a poll's pause between two
  /// looks at something another thread or process changes).
  virtual void sleep_for(std::chrono::nanoseconds pause) = 0;

  std::chrono::steady_clock::time_point steady() {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(steady_ns()));
  }
  std::int64_t wall_ms() { return wall_ns() / 1'000'000; }
};

/// The real clocks (std::chrono::steady_clock, CLOCK_REALTIME, std::this_thread::sleep_for).
Clock& real_clock();

/// The clock the core reads now: the one a ScopedClock installed, else real_clock(). Safe from
/// any thread.
Clock& clock();

/// Like Stopwatch, on clock(): for a time that decides something (the tuner keeps the fastest
/// candidate, and stops at its time limit), so that a test says how long a trial takes instead
/// of sleeping through it. The clock must not change while it runs.
class ClockStopwatch {
public:
  ClockStopwatch() : m_start(clock().steady_ns()) {}
  double ms() const { return static_cast<double>(clock().steady_ns() - m_start) / 1e6; }

private:
  std::int64_t m_start;
};

/// Installs `clock` for the whole process while it lives, and puts back the one it replaced
/// when it goes. For tests: `clock` must outlive the ScopedClock and be safe to call from every
/// thread, and no thread of the core may still be reading it once the ScopedClock is gone.
class ScopedClock {
public:
  explicit ScopedClock(Clock& clock);
  ~ScopedClock();
  ScopedClock(const ScopedClock&) = delete;
  ScopedClock& operator=(const ScopedClock&) = delete;

private:
  Clock* m_previous;
};

} // namespace jitcache::detail
