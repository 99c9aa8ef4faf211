#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache {

/// A header found while scanning a source's includes.
struct IncludedHeader {
  std::string name;    ///< resolved path, or the in-memory name
  std::string content; ///< its bytes
};

/// Finds the headers `source` pulls in through #include, recursively, resolving "x" first
/// against the including file's directory, then each of `include_dirs` in order; <x> against
/// `include_dirs` only; `in_memory` headers (name -> content) win over the filesystem.
/// Includes that resolve nowhere (runtime-provided headers) are skipped. Each header appears
/// once, in first-seen order. Conditionals are not evaluated: a header in an #if 0 branch still
/// counts (more key, never less).
std::vector<IncludedHeader> scan_includes(std::string_view source,
                                          const std::vector<std::filesystem::path>& include_dirs,
                                          const std::map<std::string, std::string>& in_memory = {});

/// The -I directories named in a compiler option string ("-Idir", "-I dir", "-I'dir'"),
/// in order, followed by the current directory.
std::vector<std::filesystem::path> include_dirs_from_options(std::string_view options);

} // namespace jitcache
