#pragma once

#include <jitcache/expected.hpp>

#include <cstddef>
#include <functional>
#include <string>

namespace jitcache::cli {

/// Calls `fn(line, number)` for each line of the request record `file` (JITCACHE_RECORD: kernel
/// requests and tuning problems, one JSON object a line) that is not empty, numbered from 1, in
/// order, without its newline. Errors: those of reading it (a regular file, of at most 16 GiB:
/// sources and headers are in it by content), naming it.
Expected<void> each_record_line(const std::string& file,
                                const std::function<void(const std::string&, std::size_t)>& fn);

/// Prints "jitcache: warning: FILE:NUMBER: <the first line of why>; line skipped" on stderr.
void skip_record_line(const std::string& file, std::size_t number, const std::string& why);

} // namespace jitcache::cli
