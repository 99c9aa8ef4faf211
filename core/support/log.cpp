#include "core/support/log.hpp"

#include "core/support/fork_safe_mutex.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>

namespace jitcache::log {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::warn)};

// Never destroyed: a thread may log during exit. A forked child may log while a thread of its
// parent did: ForkSafeMutex. No line is written from within another ForkSafeMutex's section.
detail::ForkSafeMutex& line_mutex() {
  static auto* const mutex = new detail::ForkSafeMutex;
  return *mutex;
}

// The lines said once, and their lock.
struct SaidOnce {
  detail::ForkSafeMutex mutex;
  std::set<std::string> keys;
};
SaidOnce& said_once() {
  static auto* const said = new SaidOnce;
  return *said;
}

[[maybe_unused]] const bool g_log_made_before_main =
    (line_mutex(), said_once(), true); // see ForkSafeMutex

const char* label(LogLevel level) {
  switch (level) {
  case LogLevel::error:
    return "error";
  case LogLevel::warn:
    return "warning";
  case LogLevel::info:
    return "info";
  case LogLevel::debug:
    return "debug";
  }
  return "";
}
} // namespace

void set_level(LogLevel level) {
  g_level = static_cast<int>(level);
}

void write(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > g_level.load(std::memory_order_relaxed))
    return;
  const std::lock_guard<detail::ForkSafeMutex> lock(line_mutex());
  std::fprintf(stderr, "jitcache: %s: %.*s\n", label(level), static_cast<int>(message.size()),
               message.data());
}

void write_once(LogLevel level, const std::string& once_key, std::string_view message) {
  SaidOnce& said = said_once();
  {
    const std::lock_guard<detail::ForkSafeMutex> lock(said.mutex);
    if (!said.keys.insert(once_key).second)
      return;
  }
  write(level, message);
}

void forget_said_once() {
  SaidOnce& said = said_once();
  const std::lock_guard<detail::ForkSafeMutex> lock(said.mutex);
  said.keys.clear();
}

} // namespace jitcache::log
