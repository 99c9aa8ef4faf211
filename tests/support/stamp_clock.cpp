#include "tests/support/stamp_clock.hpp"

#include <atomic>

namespace jitcache::test {

namespace {

// Constant-initialised: a FakeStampClock at namespace scope in another file (constructed, and
// stopped, during dynamic initialisation) may set it before this file's dynamic initialisation.
std::atomic<std::int64_t> g_now{0};

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
