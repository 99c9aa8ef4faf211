#pragma once

#include <jitcache/tuning.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace jitcache::tuning {

/// The version of a tuning problem's line in a request record. You MUST bump it when a field
/// changes meaning or a required field is added; read_problem() refuses lines of another version.
inline constexpr int k_problem_line_version = 1;

/// A tuning problem as one JSON line of the request record (JITCACHE_RECORD), beside the kernel
/// requests of core/record/request_record and told from them by `"kind": "tuning"`: the family's
/// name and version, the problem, the device's backend, name and identity where it was met, and
/// `candidates` (select()'s; none from lookup()). No newline. Never fails.
std::string encode_problem_line(const Family& family, const Problem& problem, const Device& device,
                                const std::vector<Parameters>& candidates);

/// Whether `line` is a tuning problem's line (a JSON object whose "kind" is "tuning"), whatever
/// else it holds. Never fails.
bool is_problem_line(std::string_view line);

} // namespace jitcache::tuning
