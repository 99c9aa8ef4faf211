#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace jitcache::detail {

/// Every argument of a request for a program of the runtimes that take one option per element
/// and headers by name (cuda::Program, hip::Program: source, name, options, headers, name
/// expressions), and the current directory (relative paths depend on it), as one string: each
/// part length-prefixed, each list counted, so no two requests flatten alike. What the memory
/// tier's request hash and a manifest's name are made of.
template <typename Program> std::string flatten_request(const Program& program) {
  std::string out;
  const auto add = [&out](std::string_view part) {
    const std::uint64_t size = part.size();
    out.append(reinterpret_cast<const char*>(&size), sizeof size);
    out.append(part);
  };
  std::error_code ec; // a removed current directory reads as empty here; the key step reports it
  add(std::filesystem::current_path(ec).string());
  add(program.name);
  add(program.source);
  add(std::to_string(program.options.size()));
  for (const std::string& option : program.options)
    add(option);
  add(std::to_string(program.headers.size()));
  for (const auto& header : program.headers) {
    add(header.name);
    add(header.content);
  }
  add(std::to_string(program.name_expressions.size()));
  for (const std::string& expression : program.name_expressions)
    add(expression);
  return out;
}

} // namespace jitcache::detail
