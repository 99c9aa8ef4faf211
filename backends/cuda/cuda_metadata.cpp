#include "backends/cuda/cuda_metadata.hpp"

#include "core/support/byte_io.hpp"

#include <charconv>

namespace jitcache::cuda {

using detail::append_counted;
using detail::take_counted;
using detail::take_prefix;

namespace {

constexpr std::string_view k_magic = "jitcache-cuda-metadata 1";

// Splits off the first line of `text` (without its newline); nullopt when no newline is left.
std::optional<std::string_view> take_line(std::string_view& text) {
  const std::size_t end = text.find('\n');
  if (end == std::string_view::npos)
    return std::nullopt;
  std::string_view line = text.substr(0, end);
  text.remove_prefix(end + 1);
  return line;
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
