#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace jitcache::test {

/// The JSON objects of a CLI's `--json` output, one a line (empty lines skipped). Throws
/// nlohmann::json::parse_error on a line that is not JSON.
inline std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      lines.push_back(nlohmann::json::parse(line));
  return lines;
}

/// How many lines `text` ends (its newlines): what a command printed, counted.
inline std::size_t line_count(const std::string& text) {
  std::size_t n = 0;
  for (char c : text)
    n += c == '\n';
  return n;
}

/// The first line of `text`, without its newline (all of it when it has none).
inline std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

/// The lines of the text file at `path`, without their newlines (none when it cannot be read).
inline std::vector<std::string> file_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

} // namespace jitcache::test
