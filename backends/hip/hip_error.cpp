#include "backends/hip/hip_error.hpp"

#include <string_view>

namespace jitcache::hip {

bool rejects_image(hipError_t rc) noexcept {
  switch (rc) {
  case hipErrorInvalidImage:
  case hipErrorNoBinaryForGpu:
  case hipErrorInvalidKernelFile:
  case hipErrorInvalidSource:
  case hipErrorSharedObjectSymbolNotFound:
  case hipErrorSharedObjectInitFailed:
    return true;
  default:
    return false;
  }
}

namespace {

ErrorCode code_of(hipError_t rc) noexcept {
  switch (rc) {
  case hipErrorNoDevice:
  case hipErrorInvalidDevice:
    return ErrorCode::no_device;
  case hipErrorInsufficientDriver:
  case hipErrorNotInitialized:
    return ErrorCode::runtime_missing;
  default:
    return rejects_image(rc) ? ErrorCode::load_failed : ErrorCode::runtime_error;
  }
}

} // namespace

Error hip_error(const RuntimeApi& api, const char* call, hipError_t rc) {
  const char* name = api.hipGetErrorName(rc);
  const char* text = api.hipGetErrorString(rc);
  std::string message = std::string(call) + " failed: " + (name ? name : "hipError") + " (" +
                        std::to_string(static_cast<int>(rc)) + ")";
  if (text && *text && (!name || std::string_view(text) != name)) // HIP 5.2 gives the name twice
    message += std::string(": ") + text;
  return Error(code_of(rc), std::move(message));
}

Error hiprtc_error(const RuntimeApi& api, const char* call, hiprtcResult rc,
                   const std::string& what, ErrorCode code, std::string log) {
  std::string message = std::string(call) + " failed";
  if (!what.empty())
    message += " for " + what;
  const char* name = api.hiprtcGetErrorString(rc);
  message += std::string(": ") + (name ? name : "HIPRTC_ERROR") + " (" +
             std::to_string(static_cast<int>(rc)) + ")";
  return Error(code, std::move(message), std::move(log));
}

} // namespace jitcache::hip
