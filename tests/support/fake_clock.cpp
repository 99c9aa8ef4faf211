#include "tests/support/fake_clock.hpp"

#include <thread>
#include <utility>

namespace jitcache::test {

namespace {
// The steady clock starts at an hour, not 0: a time point made by subtracting a lease or a
// back-off from it stays positive.
constexpr std::int64_t k_steady_start_ns = 3600'000'000'000ll;
} // namespace

FakeClock::FakeClock(Sleep sleep)
    : m_sleep(sleep), m_wall_origin(detail::real_clock().wall_ns() - k_steady_start_ns),
      m_now_ns(k_steady_start_ns), m_installed(*this) {}

FakeClock::~FakeClock() = default;

std::int64_t FakeClock::steady_ns() {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_now_ns;
}

std::int64_t FakeClock::wall_ns() {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_wall_origin + m_now_ns;
}

void FakeClock::sleep_for(std::chrono::nanoseconds pause) {
  std::unique_lock<std::mutex> lock(m_mutex);
  m_slept_ns += pause.count();
  if (m_sleep == Sleep::advances) {
    m_now_ns += pause.count();
    m_changed.notify_all();
    lock.unlock();
    std::this_thread::yield(); // what the pause was for: letting another thread move on
    return;
  }
  const std::int64_t until = m_now_ns + pause.count();
  ++m_sleepers;
  m_changed.notify_all();
  m_changed.wait(lock, [&] { return m_now_ns >= until; });
  --m_sleepers;
}

void FakeClock::advance(std::chrono::nanoseconds by) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_now_ns += by.count();
  m_changed.notify_all();
}

bool FakeClock::wait_for_sleepers(int count) {
  std::unique_lock<std::mutex> lock(m_mutex);
  return m_changed.wait_for(lock, std::chrono::seconds(60), [&] { return m_sleepers >= count; });
}

std::chrono::nanoseconds FakeClock::slept() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return std::chrono::nanoseconds(m_slept_ns);
}

ReportingClock::ReportingClock(std::function<void()> first_pause)
    : m_first_pause(std::move(first_pause)), m_installed(*this) {}

ReportingClock::~ReportingClock() = default;

void ReportingClock::sleep_for(std::chrono::nanoseconds pause) {
  std::call_once(m_reported, m_first_pause);
  detail::real_clock().sleep_for(pause);
}

} // namespace jitcache::test
