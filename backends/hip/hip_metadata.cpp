#include "backends/hip/hip_metadata.hpp"

#include <charconv>

namespace jitcache::hip {

namespace {

void put(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

bool take(std::string_view& in, std::string& field) {
  const std::size_t colon = in.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return false;
  std::size_t length = 0;
  const auto [end, ec] = std::from_chars(in.data(), in.data() + colon, length);
  if (ec != std::errc() || end != in.data() + colon || in.size() - colon - 1 < length)
    return false;
  field.assign(in.substr(colon + 1, length));
  in.remove_prefix(colon + 1 + length);
  return true;
}

} // namespace

std::string encode_lowered_names(const std::map<std::string, std::string>& names) {
  std::string out;
  for (const auto& [expression, symbol] : names) {
    put(out, expression);
    put(out, symbol);
  }
  return out;
}

Expected<std::map<std::string, std::string>> decode_lowered_names(std::string_view metadata) {
  std::map<std::string, std::string> names;
  while (!metadata.empty()) {
    std::string expression, symbol;
    if (!take(metadata, expression) || !take(metadata, symbol))
      return Error(ErrorCode::corrupt, "the stored lowered names are malformed");
    names.emplace(std::move(expression), std::move(symbol));
  }
  return names;
}

} // namespace jitcache::hip
