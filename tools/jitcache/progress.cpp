#include "tools/jitcache/progress.hpp"

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

Progress::Progress(std::size_t total, const Output& out)
    : m_total(total), m_out(out), m_terminal(!out.json() && ::isatty(STDERR_FILENO)) {}

void Progress::report(bool failed, const nlohmann::json& line, const std::string& text) {
  std::lock_guard<std::mutex> lock(m_mutex);
  ++m_done;
  m_failed += failed;
  if (!m_terminal) {
    m_out.emit(line, "[" + std::to_string(m_done) + "/" + std::to_string(m_total) + "] " + text);
    return;
  }
  const double elapsed = m_clock.ms() / 1000;
  const double left = elapsed / static_cast<double>(m_done) * static_cast<double>(m_total - m_done);
  std::cerr << "\r\033[K" << m_done << "/" << m_total << " done, " << m_failed << " failed, "
            << seconds_text(elapsed) << " elapsed, about " << seconds_text(left) << " left"
            << std::flush;
}

void Progress::finish() const {
  if (m_terminal)
    std::cerr << '\n';
}

} // namespace jitcache::cli
