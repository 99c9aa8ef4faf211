#pragma once

#include "backends/hip/hip_api.hpp"

#include <jitcache/entry.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/hip.hpp>

#include <string_view>

namespace jitcache::hip {

/// Compiles `program` with hipRTC for `target` (canonical, already validated: hipRTC 5.2 aborts
/// on an unknown one). Returns the entry to store: the code object as payload (checked to be an
/// AMDGPU ELF for `target`) and the lowered names as metadata.
/// Errors: compile_failed (Error::log holds hipRTC's log), invalid_argument (a name expression
/// hipRTC refuses), runtime_error (any other hipRTC failure, or output that is not a code object
/// for `target`, e.g. bitcode from -fgpu-rdc), and runtime_ready()'s errors.
Expected<Entry> compile_entry(const RuntimeApi& api, std::string_view target,
                              const Program& program);

} // namespace jitcache::hip
