#pragma once

#include <jitcache/config.hpp>

#include <string>
#include <string_view>

namespace jitcache::log {

/// Sets the process-wide level (the Cache does this from its Config).
void set_level(LogLevel level);

/// Writes "jitcache: <level>: <message>" to stderr when `level` is enabled. Thread-safe.
void write(LogLevel level, std::string_view message);

/// Like write(), but each distinct `once_key` is written at most once per process (a forked
/// child inherits what its parent has written).
void write_once(LogLevel level, const std::string& once_key, std::string_view message);

/// Forgets every `once_key` written so far, so that the process warns again as a new one would:
/// for a test's forked child, whose warnings must not depend on what the tests before it in the
/// same process wrote. Thread-safe.
void forget_said_once();

inline void error(std::string_view m) {
  write(LogLevel::error, m);
}
inline void warn(std::string_view m) {
  write(LogLevel::warn, m);
}
inline void info(std::string_view m) {
  write(LogLevel::info, m);
}
inline void debug(std::string_view m) {
  write(LogLevel::debug, m);
}

} // namespace jitcache::log
