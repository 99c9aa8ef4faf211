#include "tools/jitcache/output.hpp"

#include "core/support/json_line.hpp"
#include "core/support/regular_file.hpp"

#include <jitcache/config.hpp>
#include <jitcache/expected.hpp>

#include <cerrno>
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

Expected<std::string> read_source(const std::string& path, const std::string& max_size) {
  const auto limit = parse_size(max_size);
  if (!limit)
    return Error(ErrorCode::invalid_argument,
                 "--max-source-size " + max_size + ": not a size (e.g. 64M, 1G)");
  return detail::read_regular_file(path, *limit);
}

} // namespace jitcache::cli
