#pragma once

#include "core/record/request_record.hpp"
#include "core/support/byte_io.hpp"

#include <filesystem>
#include <string>
#include <system_error>

namespace jitcache::detail {

/// Every argument of a compile request in one string, for a record name's parts and the memory
/// tier's request hash: the current directory (relative paths in options depend on it; empty
/// when it was removed, which the key step then reports), then `program`'s name, source,
/// options, in-memory headers and name expressions, each length-prefixed and each list counted,
/// so no two requests flatten alike. `Program` is a backend's program type with those members
/// (cuda::Program, hip::Program).
template <typename Program> std::string flatten_request(const Program& program) {
  std::string out;
  std::error_code ec;
  append_sized(out, std::filesystem::current_path(ec).string());
  append_sized(out, program.name);
  append_sized(out, program.source);
  append_sized(out, std::to_string(program.options.size()));
  for (const std::string& option : program.options)
    append_sized(out, option);
  append_sized(out, std::to_string(program.headers.size()));
  for (const auto& header : program.headers) {
    append_sized(out, header.name);
    append_sized(out, header.content);
  }
  append_sized(out, std::to_string(program.name_expressions.size()));
  for (const std::string& expression : program.name_expressions)
    append_sized(out, expression);
  return out;
}

/// The request `program` makes for `target`, as a record carries it (the key's
/// part is filled by record_request): the program's name, source, options and name expressions,
/// the target and the current directory (the variables are the key's compile environment,
/// which record_request fills). `Program` as for flatten_request().
template <typename Program>
RequestRecord describe_request(const Program& program, const std::string& target) {
  RequestRecord record;
  std::error_code ec;
  record.device = target;
  record.options = program.options;
  record.directory = std::filesystem::current_path(ec).string();
  record.name = program.name;
  record.source = program.source;
  record.name_expressions = program.name_expressions;
  return record;
}

} // namespace jitcache::detail
