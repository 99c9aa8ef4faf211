#pragma once

// NVRTC as the front-end sees it (rtc::Interposer's `Api`): the names, the types, the outputs, the
// options it does not model. Shared by libjitcache-nvrtc's C API (nvrtc_interposer.cpp) and the
// command-line tool's `nvrtc` backend (`jitcache warm` of a recorded application).

#include "backends/cuda/cuda_api.hpp"
#include "interposers/rtc/real_library.hpp"
#include "interposers/rtc/rtc_interposer.hpp"

#include <array>

#include <nvrtc.h>

namespace jitcache::nvrtc {

struct Api {
  using Result = nvrtcResult;
  using Program = nvrtcProgram;
  static constexpr Result k_success = NVRTC_SUCCESS;
  static constexpr Result k_internal_error = NVRTC_ERROR_INTERNAL_ERROR;

  struct Real {
    cuda::NvrtcApi nvrtc; ///< what the CUDA backend's identity code reads
    decltype(&::nvrtcCreateProgram) create;
    decltype(&::nvrtcDestroyProgram) destroy;
    decltype(&::nvrtcAddNameExpression) add_name_expression;
    decltype(&::nvrtcCompileProgram) compile;
    decltype(&::nvrtcGetLoweredName) lowered_name;
#define JITCACHE_NVRTC_PASSED(X)                                                                   \
  X(nvrtcGetPTXSize)                                                                               \
  X(nvrtcGetPTX)                                                                                   \
  X(nvrtcGetCUBINSize)                                                                             \
  X(nvrtcGetCUBIN)                                                                                 \
  X(nvrtcGetLTOIRSize)                                                                             \
  X(nvrtcGetLTOIR)                                                                                 \
  X(nvrtcGetOptiXIRSize)                                                                           \
  X(nvrtcGetOptiXIR)                                                                               \
  X(nvrtcGetProgramLogSize)                                                                        \
  X(nvrtcGetProgramLog)                                                                            \
  X(nvrtcGetErrorString)                                                                           \
  X(nvrtcVersion)                                                                                  \
  X(nvrtcGetNumSupportedArchs)                                                                     \
  X(nvrtcGetSupportedArchs)                                                                        \
  X(nvrtcGetPCHHeapSize)                                                                           \
  X(nvrtcSetPCHHeapSize)                                                                           \
  X(nvrtcGetPCHCreateStatus)                                                                       \
  X(nvrtcGetPCHHeapSizeRequired)                                                                   \
  X(nvrtcSetFlowCallback)
#define JITCACHE_NVRTC_MEMBER(fn) decltype(&::fn) fn = nullptr;
    JITCACHE_NVRTC_PASSED(JITCACHE_NVRTC_MEMBER)
#undef JITCACHE_NVRTC_MEMBER
  };

  static const Real* real() {
    return rtc::OpenOnce<Real>::get(open);
  }

  static const rtc::FrontEnd& front_end();
  using Interposer = rtc::Interposer<Api>;
  /// The Get*Size/Get* pairs, in a table exit never destroys (calls may come during exit).
  static const auto& outputs() {
    static constexpr std::array<Interposer::OutputGetters, 5> table{{
        {"PTX", &Real::nvrtcGetPTXSize, &Real::nvrtcGetPTX},
        {"CUBIN", &Real::nvrtcGetCUBINSize, &Real::nvrtcGetCUBIN},
        {"LTOIR", &Real::nvrtcGetLTOIRSize, &Real::nvrtcGetLTOIR},
        {"OptiXIR", &Real::nvrtcGetOptiXIRSize, &Real::nvrtcGetOptiXIR},
        {"ProgramLog", &Real::nvrtcGetProgramLogSize, &Real::nvrtcGetProgramLog},
    }};
    return table;
  }

private:
  static const Real* open();
};

} // namespace jitcache::nvrtc
