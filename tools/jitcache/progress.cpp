#include "tools/jitcache/progress.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include <unistd.h>

namespace jitcache::cli {

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

namespace {

// Moves to the start of the terminal's line and clears it.
constexpr const char* k_clear_line = "\r\033[K";

} // namespace

Progress::Progress(std::size_t total, const Output& out, Lines lines)
    : m_total(total), m_out(out), m_lines(lines),
      m_terminal((lines == Lines::kept || !out.json()) && ::isatty(STDERR_FILENO)) {
  if (m_terminal)
    m_ticker = std::thread([this] { tick(); });
}

Progress::~Progress() {
  finish();
}

void Progress::tick() {
  std::unique_lock<std::mutex> lock(m_mutex);
  while (!m_finished) {
    m_wake.wait_for(lock, std::chrono::milliseconds(500));
    if (!m_finished)
      draw();
  }
}

void Progress::begin(const std::string& what) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_in_flight.emplace_back(what, m_clock.ms() / 1000);
  if (m_terminal)
    draw();
}

void Progress::count(bool failed, const std::string& what) {
  ++m_done;
  m_failed += failed;
  for (auto it = m_in_flight.begin(); it != m_in_flight.end(); ++it)
    if (it->first == what) {
      m_in_flight.erase(it);
      break;
    }
}

void Progress::report(bool failed, const nlohmann::json& line, const std::string& text,
                      const std::string& what) {
  std::lock_guard<std::mutex> lock(m_mutex);
  count(failed, what);
  if (!m_terminal) {
    m_out.emit(line, "[" + std::to_string(m_done) + "/" + std::to_string(m_total) + "] " + text);
    return;
  }
  draw();
}

void Progress::done(bool failed, const std::string& what, const std::function<void()>& print) {
  std::lock_guard<std::mutex> lock(m_mutex);
  count(failed, what);
  if (m_terminal)
    std::cerr << k_clear_line << std::flush;
  print();
  if (m_terminal)
    draw();
}

void Progress::draw() {
  const double elapsed = m_clock.ms() / 1000;
  std::cerr << k_clear_line << m_done << "/" << m_total << " done, " << m_failed << " failed, "
            << seconds_text(elapsed) << " elapsed";
  double spent = 0; // by the items in flight so far
  for (const auto& [what, started] : m_in_flight)
    spent += elapsed - started;
  if (!m_in_flight.empty()) {
    const auto& [what, started] = m_in_flight.front(); // in flight the longest
    std::cerr << ", now " << what << " (" << seconds_text(elapsed - started) << ")";
  }
  if (m_done < m_total) {
    if (m_done == 0) {
      std::cerr << ", estimating";
    } else {
      // Wall time per item done so far, for those left, less what those in flight have spent
      // (spread over the items at once: several run side by side).
      const double per_item = elapsed / static_cast<double>(m_done);
      const double width = std::max<double>(1, static_cast<double>(m_in_flight.size()));
      const double left = per_item * static_cast<double>(m_total - m_done) - spent / width;
      std::cerr << (left > 0 ? ", about " + seconds_text(left) + " left"
                             : std::string(", more than estimated"));
    }
  }
  std::cerr << std::flush;
}

void Progress::finish() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_finished)
      return;
    m_finished = true;
  }
  m_wake.notify_all();
  if (m_ticker.joinable())
    m_ticker.join();
  if (m_terminal && m_lines == Lines::kept)
    std::cerr << k_clear_line << std::flush; // the items' lines said it all
  else if (m_terminal)
    std::cerr << '\n';
}

} // namespace jitcache::cli
