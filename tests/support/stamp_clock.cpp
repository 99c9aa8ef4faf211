#include "tests/support/stamp_clock.hpp"

#include <atomic>

namespace jitcache::test {

namespace {

std::atomic<std::int64_t> g_now{detail::real_time_ns()}; // stopped at the start

} // namespace

void FakeStampClock::settle() {
  g_now = detail::real_time_ns() + 3'000'000'000ll;
}

void FakeStampClock::stop() {
  g_now = detail::real_time_ns();
}

std::int64_t FakeStampClock::now() {
  return g_now;
}

} // namespace jitcache::test
