#pragma once

#include <nlohmann/json.hpp>

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

} // namespace jitcache::test
