#pragma once

#include "core/key/file_stamp.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::detail {

/// A header found while scanning a source's includes.
/// The path recorded for headers given in memory.
inline constexpr const char* k_in_memory_path = "(in memory)";

struct IncludedHeader {
  std::string name;         ///< as the #include spells it (or the in-memory name)
  std::string path;         ///< where it was found (canonical), or k_in_memory_path
  std::string_view content; ///< its bytes, held by `owner` (a file's shared with read_header)
  std::shared_ptr<const std::string> owner;
  detail::FileStamp stamp; ///< of the file as it was read (not exists: given in memory)
};

/// An `#include MACRO` line: its target is only known after preprocessing.
struct ComputedInclude {
  std::string macro;            ///< the text after `#include`
  std::filesystem::path folder; ///< of the file that holds it (the source's: the current one)
  bool in_memory = false;       ///< held by a header given in memory (no folder)
};

/// The result of a scan: the headers found, and the `#include MACRO` lines whose target the
/// scanner cannot know without preprocessing.
struct IncludeScan {
  std::vector<IncludedHeader> headers;
  std::vector<ComputedInclude> computed; ///< each computed include, in the order found
  /// Candidate paths looked at before the one an include resolved to, and those of includes
  /// that resolved nowhere: a file created at one of them would change what is included.
  std::vector<std::string> absent;
  /// The names of quoted includes ("x") found nowhere: neither given in memory nor at any
  /// candidate path. Each once, in name order.
  std::vector<std::string> unresolved;
};

/// Finds the headers `source` pulls in through #include, recursively, resolving "x" first
/// against the including file's directory, then each of `include_dirs` in order; <x> against
/// `include_dirs` only; `in_memory` headers (name -> content) win over the filesystem.
/// Includes that resolve nowhere (runtime-provided headers) are skipped. Each header appears
/// once, in first-seen order. Conditionals are not evaluated: a header in an #if 0 branch still
/// counts (more key, never less).
IncludeScan scan_includes(std::string_view source,
                          const std::vector<std::filesystem::path>& include_dirs,
                          const std::map<std::string, std::string>& in_memory = {});

/// The #include directives of `text` as scan_includes() reads them, in one string: texts with
/// the same directives in the same order give the same string, and the same scan (with the same
/// folders, headers in memory and files).
std::string include_directives(std::string_view text);

/// The content of the regular file `path` as read_stamped() gives it (`stamp` set likewise),
/// read once per process while stat(2) gives the stamp it was read with and that stamp is old
/// enough to vouch for its content (too_recent): a process compiles many kernels on the same
/// headers. nullptr: absent, unreadable or not a regular file. Thread-safe.
std::shared_ptr<const std::string> read_header(const std::string& path, FileStamp& stamp);

/// Splits an option string the way a shell would for the simple cases compilers see: whitespace
/// separates, single and double quotes group (and are removed).
std::vector<std::string> split_options(std::string_view options);

} // namespace jitcache::detail
