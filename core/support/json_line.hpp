#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace jitcache::detail {

/// `value` as one line of JSON text (no newline added; compact). Strings that are not UTF-8
/// (a compiler's message, a path, a source's bytes) have their bad bytes replaced by U+FFFD
/// instead of throwing, so whatever jitcache writes as JSON is always written.
std::string json_line(const nlohmann::json& value);

} // namespace jitcache::detail
