#include "core/support/clock.hpp"

#include <atomic>
#include <ctime>
#include <thread>

namespace jitcache::detail {

namespace {

class RealClock final : public Clock {
public:
  std::int64_t steady_ns() override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  std::int64_t wall_ns() override {
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec * 1'000'000'000ll + now.tv_nsec;
  }
  void sleep_for(std::chrono::nanoseconds pause) override { std::this_thread::sleep_for(pause); }
};

// Constant-initialised (null: the real clock), so that it may be read during static
// initialisation of other files.
std::atomic<Clock*> g_clock{nullptr};

} // namespace

Clock& real_clock() {
  // Never destroyed: a thread still running at exit (a detached store worker) may read it.
  static Clock* const clock = new RealClock;
  return *clock;
}

Clock& clock() {
  Clock* installed = g_clock.load(std::memory_order_acquire);
  return installed ? *installed : real_clock();
}

ScopedClock::ScopedClock(Clock& clock)
    : m_previous(g_clock.exchange(&clock, std::memory_order_acq_rel)) {}

ScopedClock::~ScopedClock() {
  g_clock.store(m_previous, std::memory_order_release);
}

} // namespace jitcache::detail
