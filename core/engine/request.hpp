#pragma once

#include "core/engine/request_hash.hpp"
#include "core/record/request_record.hpp"
#include "core/support/current_directory.hpp"

#include <string>

namespace jitcache::detail {

/// Adds every argument of a compile request to `out`, each where it lies: the current directory
/// (relative paths in options depend on it; empty when it was removed, which the key step then
/// reports), then `program`'s name, source, options, in-memory headers and name expressions, each
/// list counted, so no two requests hash alike. `Program` is a backend's program type with those
/// members (cuda::Program, hip::Program).
template <typename Program> void hash_request_arguments(const Program& program, RequestParts& out) {
  out.add(CurrentDirectory().path());
  out.add(program.name);
  out.add(program.source);
  out.add_count(program.options.size());
  for (const std::string& option : program.options)
    out.add(option);
  out.add_count(program.headers.size());
  for (const auto& header : program.headers) {
    out.add(header.name);
    out.add(header.content);
  }
  out.add_count(program.name_expressions.size());
  for (const std::string& expression : program.name_expressions)
    out.add(expression);
}

/// The request `program` makes for `target`, as a record carries it (the key's
/// part is filled by record_request): the program's name, source, options and name expressions,
/// the target and the current directory (the variables are the key's compile environment,
/// which record_request fills). `Program` as for hash_request_arguments().
template <typename Program>
RequestRecord describe_request(const Program& program, const std::string& target) {
  RequestRecord record;
  record.device = target;
  record.options = program.options;
  record.directory = std::string(CurrentDirectory().path());
  record.name = program.name;
  record.source = program.source;
  record.name_expressions = program.name_expressions;
  return record;
}

} // namespace jitcache::detail
