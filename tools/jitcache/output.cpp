#include "tools/jitcache/output.hpp"

#include "core/support/json_line.hpp"
#include "core/support/regular_file.hpp"

#include <jitcache/config.hpp>
#include <jitcache/expected.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace jitcache::cli {

void Output::emit(const nlohmann::json& object, const std::string& text) const {
  if (m_json)
    std::cout << detail::json_line(object) << '\n'; // a runner's or compiler's bytes replaced
  else
    std::cout << text << '\n';
}

int fail(const Error& error) {
  std::string first = error.message.substr(0, error.message.find('\n'));
  std::cerr << "jitcache: error: " << first << '\n';
  if (!error.log.empty())
    std::cerr << error.log << '\n';
  return 1;
}

namespace {

std::string& usage_text() {
  static std::string usage;
  return usage;
}

} // namespace

void set_usage(std::string usage) {
  usage_text() = std::move(usage);
}

int usage_error(const std::string& message) {
  std::cerr << "jitcache: error: " << message.substr(0, message.find('\n')) << '\n' << usage_text();
  return 2;
}

int fail_option(const Error& error) {
  return error.code == ErrorCode::invalid_argument ? usage_error(error.message) : fail(error);
}

Expected<std::string> read_source(const std::string& path, const std::string& max_size) {
  const auto limit = parse_size(max_size);
  if (!limit)
    return Error(ErrorCode::invalid_argument,
                 "--max-source-size " + max_size + ": not a size (e.g. 64M, 1G)");
  // 0 is "no limit", as for every size limit (JITCACHE_MAX_SIZE, prune --max-size).
  return detail::read_regular_file(path, *limit ? *limit : UINT64_MAX);
}

std::string pairs_text(const std::map<std::string, std::string>& map, const char* if_empty) {
  std::string out;
  for (const auto& [name, value] : map)
    out += (out.empty() ? "" : ",") + name + "=" + value;
  return out.empty() ? if_empty : out;
}

} // namespace jitcache::cli
