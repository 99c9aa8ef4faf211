#include "backends/opencl/opencl_metadata.hpp"

#include "core/support/byte_io.hpp"

#include <algorithm>

namespace jitcache::opencl {

using detail::append_counted;
using detail::take_counted;
using detail::take_prefix;

namespace {

constexpr std::string_view k_magic = "jitcache-opencl-metadata 1\n";

// "NAME " and a length-prefixed value, then a newline.
std::optional<std::string> take_field(std::string_view& text, std::string_view name) {
  if (!take_prefix(text, name) || !take_prefix(text, " "))
    return std::nullopt;
  auto value = take_counted(text);
  if (!value || !take_prefix(text, "\n"))
    return std::nullopt;
  return value;
}

} // namespace

std::string encode_metadata(const Metadata& metadata) {
  std::string out(k_magic);
  out += "source ";
  append_counted(out, metadata.source);
  out += "\nlog ";
  append_counted(out, metadata.log);
  out += '\n';
  for (const std::string& kernel : metadata.kernels) {
    out += "kernel ";
    append_counted(out, kernel);
    out += '\n';
  }
  return out;
}

std::optional<Metadata> decode_metadata(std::string_view text) {
  Metadata metadata;
  if (!take_prefix(text, k_magic))
    return std::nullopt;
  auto source = take_field(text, "source");
  if (!source)
    return std::nullopt;
  metadata.source = std::move(*source);
  if (text.substr(0, 4) == "log ") {
    auto log = take_field(text, "log");
    if (!log)
      return std::nullopt;
    metadata.log = std::move(*log);
  }
  while (!text.empty()) {
    auto kernel = take_field(text, "kernel");
    if (!kernel)
      return std::nullopt;
    metadata.kernels.push_back(std::move(*kernel));
  }
  return metadata;
}

std::vector<std::string> kernel_names(cl_program program) {
  std::size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &size) != CL_SUCCESS ||
      size == 0)
    return {};
  std::string names(size, '\0');
  if (clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, size, names.data(), nullptr) != CL_SUCCESS)
    return {};
  names.resize(names.find('\0') == std::string::npos ? size : names.find('\0'));
  std::vector<std::string> kernels;
  for (std::size_t at = 0; at <= names.size();) {
    const std::size_t end = std::min(names.find(';', at), names.size());
    if (end > at)
      kernels.push_back(names.substr(at, end - at));
    at = end + 1;
  }
  std::sort(kernels.begin(), kernels.end());
  return kernels;
}

} // namespace jitcache::opencl
