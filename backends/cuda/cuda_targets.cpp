#include "backends/cuda/cuda_targets.hpp"

#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/cuda_key.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

namespace jitcache::cuda {

namespace {

std::string supported_list(const Toolchain& toolchain) {
  std::string out;
  for (int arch : toolchain.archs)
    out += (out.empty() ? "sm_" : ", sm_") + std::to_string(arch);
  return out;
}

// "8.0" for 80, "12.1" for 121.
std::string capability_of(int arch) {
  return std::to_string(arch / 10) + "." + std::to_string(arch % 10);
}

bool supports(const Toolchain& toolchain, int arch) {
  return std::binary_search(toolchain.archs.begin(), toolchain.archs.end(), arch);
}

} // namespace

Target native_target(int arch) {
  return Target{capability_of(arch), "sm_" + std::to_string(arch), false};
}

Expected<Target> device_target(const Toolchain& toolchain, int arch) {
  if (supports(toolchain, arch))
    return native_target(arch);
  if (!toolchain.archs.empty() && arch > toolchain.archs.back())
    return Target{capability_of(arch), "compute_" + std::to_string(toolchain.archs.back()), true};
  return Error(ErrorCode::unsupported,
               "NVRTC " + toolchain.version + " cannot target this device (compute capability " +
                   capability_of(arch) + "); it can target " + supported_list(toolchain));
}

namespace {

// The number in "sm_90", "sm_90a", "sm_100f"; nullopt when `arch` is not of that form.
std::optional<int> arch_number(std::string_view arch) {
  std::string_view digits = arch.substr(0, 3) == "sm_" ? arch.substr(3) : std::string_view();
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f'))
    digits.remove_suffix(1); // arch-specific and family-specific variants of sm_XY
  unsigned number = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (digits.size() < 2 || ec != std::errc() || end != digits.data() + digits.size() ||
      number > 999)
    return std::nullopt;
  return static_cast<int>(number);
}

std::string not_an_arch(std::string_view arch) {
  return "CUDA architecture '" + std::string(arch) + "' is not of the form sm_80";
}

} // namespace

Expected<Target> named_target(std::string_view arch) {
  const auto number = arch_number(arch);
  if (!number)
    return Error(ErrorCode::invalid_argument, not_an_arch(arch));
  return Target{capability_of(*number), std::string(arch), false};
}

Expected<Target> arch_target(const Toolchain& toolchain, std::string_view arch) {
  const auto number = arch_number(arch);
  if (!number)
    return Error(ErrorCode::invalid_argument, not_an_arch(arch) + "; NVRTC " + toolchain.version +
                                                  " can target " + supported_list(toolchain));
  if (!supports(toolchain, *number))
    return Error(ErrorCode::unsupported, "NVRTC " + toolchain.version + " cannot target " +
                                             std::string(arch) + "; it can target " +
                                             supported_list(toolchain));
  return named_target(arch);
}

Expected<CUcontext> current_context(const DriverApi& api) {
  CUcontext context = nullptr;
  if (CUresult rc = api.cuCtxGetCurrent(&context); rc != CUDA_SUCCESS)
    return driver_error(api, "cuCtxGetCurrent", rc);
  if (!context)
    return Error(ErrorCode::invalid_argument,
                 "no current CUDA context: make one current first (for example "
                 "cuDevicePrimaryCtxRetain + cuCtxSetCurrent)");
  return context;
}

Expected<int> context_capability(const DriverApi& api) {
  if (auto context = current_context(api); !context)
    return std::move(context).error();
  CUdevice device = 0;
  if (CUresult rc = api.cuCtxGetDevice(&device); rc != CUDA_SUCCESS)
    return driver_error(api, "cuCtxGetDevice", rc);
  int major = 0, minor = 0;
  if (CUresult rc =
          api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
      rc != CUDA_SUCCESS)
    return driver_error(api, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", rc);
  if (CUresult rc =
          api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
      rc != CUDA_SUCCESS)
    return driver_error(api, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", rc);
  return major * 10 + minor;
}

} // namespace jitcache::cuda
