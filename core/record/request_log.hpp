#pragma once

#include "core/record/request_record.hpp"

#include <jitcache/config.hpp>
#include <jitcache/key.hpp>

#include <functional>

namespace jitcache::detail {

/// With Config::record set (JITCACHE_RECORD), appends the request `describe` gives to that file
/// as one line (core/record/request_record), once per key and file in the process: the key's
/// digest, device and toolchain fields and every header it covers (name, content, resolved path)
/// are taken from `key`, its variables are the compile environment the key covers
/// (Config::compile_environment: never jitcache's own settings, secrets among them, nor
/// locations), the rest from `describe` (called only when the line is written). Safe with any
/// number of threads and processes appending to the same file: the file is opened with
/// O_APPEND|O_NOFOLLOW (created mode 0600) and each line written whole under flock(LOCK_EX).
/// Never fails and never blocks: a line that cannot be written (a read-only directory, a full
/// disk, a symlink, a FIFO or device, a lock held for over 2 s) is one warning per file and
/// process, and the build goes on.
/// A key recalled from a manifest has no `fields`: then `full_key` (when given) builds the key
/// from the files when the line is written, so that a record never lacks its headers.
void record_request(const Config& config, const Key& key,
                    const std::function<RequestRecord()>& describe,
                    const std::function<Key()>& full_key = {});

/// With Config::record set, appends the line `line` gives (a tuning problem's,
/// core/tuning/tuning_problem_line) to that file, once per `id` (the problem's record key) and file
/// in the process; `line` is called only when the line is written. Appends and fails as
/// record_request() does.
void record_tuning_problem(const Config& config, const Digest& id,
                           const std::function<std::string()>& line);

} // namespace jitcache::detail
