#include "core/support/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>

namespace jitcache::log {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::warn)};
std::mutex g_mutex;

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
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "jitcache: %s: %.*s\n", label(level), static_cast<int>(message.size()),
               message.data());
}

void write_once(LogLevel level, const std::string& once_key, std::string_view message) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!seen.insert(once_key).second)
      return;
  }
  write(level, message);
}

} // namespace jitcache::log
