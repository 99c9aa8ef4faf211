#include "backends/cuda/cuda_metadata.hpp"

#include <charconv>

namespace jitcache::cuda {

namespace {

constexpr std::string_view k_magic = "jitcache-cuda-metadata 1";

void append_counted(std::string& out, std::string_view text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
}

// Reads "<n>:<n bytes>" from the front of `text`, advancing it.
std::optional<std::string> take_counted(std::string_view& text) {
  std::size_t size = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
  const std::size_t digits = static_cast<std::size_t>(end - text.data());
  if (ec != std::errc() || digits == 0 || digits >= text.size() || text[digits] != ':' ||
      text.size() - digits - 1 < size)
    return std::nullopt;
  std::string value(text.substr(digits + 1, size));
  text.remove_prefix(digits + 1 + size);
  return value;
}

// Splits off the first line of `text` (without its newline); nullopt when no newline is left.
std::optional<std::string_view> take_line(std::string_view& text) {
  const std::size_t end = text.find('\n');
  if (end == std::string_view::npos)
    return std::nullopt;
  std::string_view line = text.substr(0, end);
  text.remove_prefix(end + 1);
  return line;
}

bool take_prefix(std::string_view& text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix)
    return false;
  text.remove_prefix(prefix.size());
  return true;
}

} // namespace

std::string encode_metadata(const Metadata& metadata) {
  std::string out(k_magic);
  out += "\nformat " + metadata.format + "\ntarget " + metadata.target + "\n";
  for (const auto& [expression, lowered] : metadata.lowered_names) {
    out += "name ";
    append_counted(out, expression);
    out += ' ';
    append_counted(out, lowered);
    out += '\n';
  }
  return out;
}

std::optional<Metadata> decode_metadata(std::string_view text) {
  Metadata metadata;
  auto magic = take_line(text);
  auto format = take_line(text);
  auto target = take_line(text);
  if (!magic || *magic != k_magic || !format || !take_prefix(*format, "format ") || !target ||
      !take_prefix(*target, "target "))
    return std::nullopt;
  metadata.format = std::string(*format);
  metadata.target = std::string(*target);
  if (metadata.format != "cubin" && metadata.format != "ptx")
    return std::nullopt;
  while (!text.empty()) {
    if (!take_prefix(text, "name "))
      return std::nullopt;
    auto expression = take_counted(text);
    if (!expression || !take_prefix(text, " "))
      return std::nullopt;
    auto lowered = take_counted(text);
    if (!lowered || !take_prefix(text, "\n"))
      return std::nullopt;
    metadata.lowered_names.emplace(std::move(*expression), std::move(*lowered));
  }
  return metadata;
}

} // namespace jitcache::cuda
