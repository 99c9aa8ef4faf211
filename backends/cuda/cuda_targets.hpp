#pragma once

#include "backends/cuda/cuda_api.hpp"

#include <jitcache/expected.hpp>

#include <string>
#include <string_view>

namespace jitcache::cuda {

struct Toolchain; // backends/cuda/cuda_key.hpp

/// What NVRTC compiles for, and the device fields of a key.
struct Target {
  std::string compute_capability; ///< of the device (or implied by the arch asked for): "8.0"
  std::string arch;               ///< -arch value: "sm_80", or "compute_121" for PTX
  bool ptx = false;               ///< true: PTX for the driver to JIT (device newer than NVRTC)
};

/// The target of a device of compute capability `arch` (major * 10 + minor: 90 for 9.0) when
/// NVRTC is not asked: sm_XY, what a package made for that architecture serves.
Target native_target(int arch);

/// The target for a device of compute capability `arch` (major * 10 + minor): sm_XY when NVRTC
/// supports it; PTX for NVRTC's newest arch when the device is newer than that. Errors:
/// unsupported (an older or unknown device; the message lists the archs NVRTC supports).
Expected<Target> device_target(const Toolchain& toolchain, int arch);

/// The target `arch` names ("sm_80", "sm_90a"), whatever NVRTC can target. Errors:
/// invalid_argument (not sm_XY[a|f]).
Expected<Target> named_target(std::string_view arch);

/// The target `arch` names, when NVRTC can target it. Errors: invalid_argument (not
/// sm_XY[a|f]; the message lists the archs NVRTC can target), unsupported (NVRTC cannot target
/// it; likewise).
Expected<Target> arch_target(const Toolchain& toolchain, std::string_view arch);

/// The current context. Errors: invalid_argument (none is current), runtime_error naming the
/// driver call.
Expected<CUcontext> current_context(const DriverApi& api);

/// The compute capability of the current context's device, as major * 10 + minor. Errors:
/// invalid_argument (no current context), runtime_error naming the driver call.
Expected<int> context_capability(const DriverApi& api);

} // namespace jitcache::cuda
