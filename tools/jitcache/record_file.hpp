#pragma once

#include <jitcache/expected.hpp>

#include <cstddef>
#include <functional>
#include <string>

namespace jitcache::cli {

/// Whether `bytes`, the content of `file`, can be a request record (or request file): empty, or
/// one of its lines is a JSON object. A file that is no record at all (a passwd file, a binary)
/// is then one error, not a warning per line. Errors: corrupt, "FILE: not a request record: ...".
Expected<void> check_record_start(const std::string& file, const std::string& bytes);

/// Calls `fn(line, number)` for each line of the request record `file` (JITCACHE_RECORD: kernel
/// requests and tuning problems, one JSON object a line) that is not empty, numbered from 1, in
/// order, without its newline. Errors: those of reading it (a regular file, of at most 16 GiB:
/// sources and headers are in it by content), naming it; those of check_record_start().
Expected<void> each_record_line(const std::string& file,
                                const std::function<void(const std::string&, std::size_t)>& fn);

/// Prints "jitcache: warning: FILE:NUMBER: <the first line of why>; line skipped" on stderr.
void skip_record_line(const std::string& file, std::size_t number, const std::string& why);

} // namespace jitcache::cli
