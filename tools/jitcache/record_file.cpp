#include "tools/jitcache/record_file.hpp"

#include "tools/jitcache/progress.hpp"

#include "core/support/regular_file.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <sstream>

namespace jitcache::cli {

namespace {

constexpr std::uint64_t k_max_record = 16ull << 30;

} // namespace

Expected<void> check_record_start(const std::string& file, const std::string& bytes) {
  std::size_t first = 0; // the number of the first line that is not empty
  std::size_t number = 0;
  for (std::size_t at = 0; at < bytes.size();) {
    std::size_t end = bytes.find('\n', at);
    if (end == std::string::npos)
      end = bytes.size();
    const std::string_view line(bytes.data() + at, end - at);
    at = end + 1;
    ++number;
    if (line.empty())
      continue;
    if (nlohmann::json::parse(line, nullptr, false).is_object())
      return {};
    if (!first)
      first = number;
  }
  if (!first)
    return {};
  return Error(ErrorCode::corrupt, file +
                                       ": not a request record: no line of it is a JSON "
                                       "object (line " +
                                       std::to_string(first) + " is the first)");
}

Expected<void> each_record_line(const std::string& file,
                                const std::function<void(const std::string&, std::size_t)>& fn) {
  auto bytes = detail::read_regular_file(file, k_max_record);
  if (!bytes)
    return std::move(bytes).error();
  if (auto ok = check_record_start(file, *bytes); !ok)
    return ok;
  std::istringstream in(*bytes);
  std::size_t number = 0;
  for (std::string line; std::getline(in, line);)
    if (++number, !line.empty())
      fn(line, number);
  return {};
}

void skip_record_line(const std::string& file, std::size_t number, const std::string& why) {
  std::cerr << "jitcache: warning: " << file << ":" << number << ": " << first_line(why)
            << "; line skipped\n";
}

} // namespace jitcache::cli
