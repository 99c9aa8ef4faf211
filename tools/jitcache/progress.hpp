#pragma once

#include "tools/jitcache/output.hpp"

#include "core/support/clock.hpp"

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace jitcache::cli {

/// "12.3 s". Never fails.
std::string seconds_text(double seconds);

/// The text up to its first newline. Never fails.
std::string first_line(const std::string& text);

/// The progress of `total` items of work done by any number of threads (`warm`, `tune RECORD`):
/// on a terminal (stderr, text output), one line rewritten in place, and redrawn twice a second
/// while work is in flight, so that it shows within a second and never freezes: done/total,
/// failures, elapsed, the item in flight the longest (begin()) and for how long, and an estimate
/// of the time left from the time per item done so far, less what the items in flight have
/// already spent ("estimating" before one is done, "more than estimated" past it); otherwise a
/// line per item, as JSON (`--json`) or as "[done/total] text", and no carriage return.
/// With Lines::kept (`build`), each item's lines are printed as they are (done()) above the
/// progress line, which then shows on a terminal with --json too and is cleared at the end.
/// Thread-safe.
class Progress {
public:
  /// Whether the progress line replaces the items' lines on a terminal (`warm`, `tune`), or
  /// they are kept (`build`, whose lines are its result).
  enum class Lines { replaced, kept };
  Progress(std::size_t total, const Output& out, Lines lines = Lines::replaced);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  /// Item `what` (a file, a program's name) is being worked on from now.
  void begin(const std::string& what);
  /// One item done (failed or not); `line` and `text` describe it for the line-per-item form;
  /// `what` (as given to begin(), if it was) is no longer in flight.
  void report(bool failed, const nlohmann::json& line, const std::string& text,
              const std::string& what = {});
  /// Lines::kept: one item done (failed or not), `what` no longer in flight; runs `print`,
  /// which writes the item's lines (its result on stdout, an error on stderr), with the
  /// progress line cleared first and drawn again after.
  void done(bool failed, const std::string& what, const std::function<void()>& print);
  /// Ends the rewritten line (a newline on a terminal; cleared with Lines::kept) and the
  /// redrawing.
  void finish();

private:
  void draw();                                      // with m_mutex held
  void count(bool failed, const std::string& what); // with m_mutex held
  void tick();

  std::mutex m_mutex;
  std::condition_variable m_wake;
  const std::size_t m_total;
  const Output& m_out;
  const Lines m_lines;
  const bool m_terminal;
  const detail::Stopwatch m_clock;
  std::size_t m_done = 0;
  std::size_t m_failed = 0;
  std::vector<std::pair<std::string, double>> m_in_flight; ///< (what, started at s)
  bool m_finished = false;
  std::thread m_ticker;
};

} // namespace jitcache::cli
