#pragma once

#include "tools/jitcache/output.hpp"

#include "core/support/clock.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <mutex>
#include <string>

namespace jitcache::cli {

/// "12.3 s". Never fails.
std::string seconds_text(double seconds);

/// The text up to its first newline. Never fails.
std::string first_line(const std::string& text);

/// The progress of `total` items of work done by any number of threads (`warm`, `tune RECORD`):
/// on a terminal (stderr, text output), one line rewritten in place: done/total, failures,
/// elapsed, an estimate of the time left; otherwise a line per item, as JSON (`--json`) or as
/// "[done/total] text". Thread-safe.
class Progress {
public:
  Progress(std::size_t total, const Output& out);
  /// One item done (failed or not); `line` and `text` describe it for the line-per-item form.
  void report(bool failed, const nlohmann::json& line, const std::string& text);
  /// Ends the rewritten line (a newline on a terminal).
  void finish() const;

private:
  std::mutex m_mutex;
  const std::size_t m_total;
  const Output& m_out;
  const bool m_terminal;
  const detail::Stopwatch m_clock;
  std::size_t m_done = 0;
  std::size_t m_failed = 0;
};

} // namespace jitcache::cli
