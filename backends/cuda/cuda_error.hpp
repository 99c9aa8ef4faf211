#pragma once

#include "backends/cuda/cuda_api.hpp"

#include <jitcache/error.hpp>

#include <string>

namespace jitcache::cuda {

/// Whether `rc` says the context or the machine failed (out of memory, a destroyed or sticky-error
/// context, driver shutdown) rather than anything about the binary being loaded. A stored binary
/// whose load fails otherwise is treated as refused: evicted and rebuilt.
bool context_failure(CUresult rc) noexcept;

/// An Error for driver `call` having returned `rc`, e.g. "cuModuleLoadData failed:
/// CUDA_ERROR_INVALID_IMAGE (200): device kernel image is invalid". The code follows `rc`:
/// no_device, runtime_missing (driver too old for the toolkit, stub library), else runtime_error.
Error driver_error(const DriverApi& api, const char* call, CUresult rc);

/// An Error of `code` for NVRTC `call` having returned `rc`, e.g. "nvrtcCompileProgram failed
/// for saxpy.cu: NVRTC_ERROR_COMPILATION (6)"; `what` (may be empty) names the program.
Error nvrtc_error(const NvrtcApi& api, const char* call, nvrtcResult rc, const std::string& what,
                  ErrorCode code = ErrorCode::runtime_error, std::string log = {});

} // namespace jitcache::cuda
