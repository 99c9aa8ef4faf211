#include "tools/jitcache/record_file.hpp"

#include "tools/jitcache/progress.hpp"

#include "core/support/regular_file.hpp"

#include <iostream>
#include <sstream>

namespace jitcache::cli {

namespace {

constexpr std::uint64_t k_max_record = 16ull << 30;

} // namespace

Expected<void> each_record_line(const std::string& file,
                                const std::function<void(const std::string&, std::size_t)>& fn) {
  auto bytes = detail::read_regular_file(file, k_max_record);
  if (!bytes)
    return std::move(bytes).error();
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
