#include "tools/jitcache/output.hpp"

#include <jitcache/expected.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace jitcache::cli {

void Output::emit(const nlohmann::json& object, const std::string& text) const {
  if (m_json)
    std::cout << object.dump() << '\n';
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

Expected<std::string> read_source(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error(ErrorCode::io_error, "cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad())
    return Error(ErrorCode::io_error, "cannot read " + path + ": " + std::strerror(errno));
  return buf.str();
}

} // namespace jitcache::cli
