#pragma once

#include "backends/hip/hip_api.hpp"

#include <jitcache/error.hpp>

#include <string>

namespace jitcache::hip {

/// Whether `rc` from hipModuleLoadData means the runtime refused that code object (so a stored
/// one is evicted and compiled again), rather than the device or the machine failing.
bool rejects_image(hipError_t rc) noexcept;

/// An Error for HIP `call` having returned `rc`, e.g. "hipGetDeviceCount failed:
/// hipErrorNoDevice (100): no ROCm-capable device is detected". The code follows `rc`:
/// no_device (no device, an ordinal out of range), runtime_missing (driver too old, runtime not
/// initialised), load_failed (the code object was refused), else runtime_error.
Error hip_error(const RuntimeApi& api, const char* call, hipError_t rc);

/// An Error of `code` for hipRTC `call` having returned `rc`, e.g. "hiprtcCompileProgram failed
/// for saxpy.hip (gfx90a): HIPRTC_ERROR_COMPILATION (6)"; `what` (may be empty) names the
/// program and target.
Error hiprtc_error(const RuntimeApi& api, const char* call, hiprtcResult rc,
                   const std::string& what, ErrorCode code = ErrorCode::runtime_error,
                   std::string log = {});

} // namespace jitcache::hip
