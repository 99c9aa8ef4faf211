#pragma once

#include <chrono>
#include <cstdint>

namespace jitcache {

/// Monotonic stopwatch for the timings reported in BuildInfo.
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

} // namespace jitcache
