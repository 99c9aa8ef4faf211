#pragma once

#include <jitcache/expected.hpp>

#include <map>
#include <string>
#include <string_view>

namespace jitcache::hip {

/// The metadata stored with a code object: its lowered names (name expression -> symbol), as
/// length-prefixed fields ("<length>:<bytes>", expression then symbol), so any byte may appear.
std::string encode_lowered_names(const std::map<std::string, std::string>& names);

/// Parses encode_lowered_names' output. Errors: corrupt (a stored entry that is not ours).
Expected<std::map<std::string, std::string>> decode_lowered_names(std::string_view metadata);

} // namespace jitcache::hip
