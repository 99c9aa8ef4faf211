#include "backends/cuda/cuda_error.hpp"

namespace jitcache::cuda {

bool context_failure(CUresult rc) noexcept {
  switch (rc) {
  case CUDA_ERROR_OUT_OF_MEMORY:
  case CUDA_ERROR_NOT_INITIALIZED:
  case CUDA_ERROR_DEINITIALIZED:
  case CUDA_ERROR_INVALID_CONTEXT:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
    return true;
  default:
    return false;
  }
}

namespace {

ErrorCode code_of(CUresult rc) noexcept {
  switch (rc) {
  case CUDA_ERROR_NO_DEVICE:
    return ErrorCode::no_device;
  case CUDA_ERROR_STUB_LIBRARY:
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    return ErrorCode::runtime_missing;
  default:
    return ErrorCode::runtime_error;
  }
}

} // namespace

Error driver_error(const DriverApi& api, const char* call, CUresult rc) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName(rc, &name) != CUDA_SUCCESS)
    name = "CUDA_ERROR";
  std::string message =
      std::string(call) + " failed: " + name + " (" + std::to_string(static_cast<int>(rc)) + ")";
  if (api.cuGetErrorString(rc, &text) == CUDA_SUCCESS && text)
    message += std::string(": ") + text;
  return Error(code_of(rc), std::move(message));
}

Error nvrtc_error(const NvrtcApi& api, const char* call, nvrtcResult rc, const std::string& what,
                  ErrorCode code, std::string log) {
  std::string message = std::string(call) + " failed";
  if (!what.empty())
    message += " for " + what;
  message += std::string(": ") + api.nvrtcGetErrorString(rc) + " (" +
             std::to_string(static_cast<int>(rc)) + ")";
  return Error(code, std::move(message), std::move(log));
}

} // namespace jitcache::cuda
