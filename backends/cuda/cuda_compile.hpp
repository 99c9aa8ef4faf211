#pragma once

#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_key.hpp"

#include <jitcache/cuda.hpp>
#include <jitcache/entry.hpp>
#include <jitcache/expected.hpp>

namespace jitcache::cuda {

/// Compiles `program` for `target` with NVRTC: a cubin, or PTX when target.ptx. The entry's
/// metadata records the format, the target and the lowered name of every name expression.
/// NVRTC's warnings are logged at debug level. Thread-safe (one NVRTC program per call).
/// Errors: compile_failed with NVRTC's log (the source or an option was refused), runtime_error
/// naming the NVRTC call.
Expected<Entry> compile_entry(const NvrtcApi& api, const Target& target, const Program& program);

} // namespace jitcache::cuda
