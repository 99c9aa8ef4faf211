#pragma once

// hipRTC as the front-end sees it (rtc::Interposer's `Api`): the names, the types, the outputs,
// the options it does not model. Shared by libjitcache-hiprtc's C API (hiprtc_interposer.cpp) and
// the command-line tool's `hiprtc` backend (`jitcache warm` of a recorded application).

#include "interposers/rtc/real_library.hpp"
#include "interposers/rtc/rtc_interposer.hpp"

#include <array>

#include <hip/hiprtc.h>

namespace jitcache::hiprtc {

struct Api {
  using Result = hiprtcResult;
  using Program = hiprtcProgram;
  static constexpr Result k_success = HIPRTC_SUCCESS;
  static constexpr Result k_internal_error = HIPRTC_ERROR_INTERNAL_ERROR;

  // hipRTC's headers spell the string arrays `const char**`; the front-end's, as NVRTC does,
  // `const char* const*` (the same in the ABI).
  struct Real {
    Result (*create)(Program*, const char*, const char*, int, const char* const*,
                     const char* const*) = nullptr;
    decltype(&::hiprtcDestroyProgram) destroy = nullptr;
    decltype(&::hiprtcAddNameExpression) add_name_expression = nullptr;
    Result (*compile)(Program, int, const char* const*) = nullptr;
    decltype(&::hiprtcGetLoweredName) lowered_name = nullptr;
#define JITCACHE_HIPRTC_PASSED(X)                                                                  \
  X(hiprtcGetCodeSize)                                                                             \
  X(hiprtcGetCode)                                                                                 \
  X(hiprtcGetProgramLogSize)                                                                       \
  X(hiprtcGetProgramLog)                                                                           \
  X(hiprtcGetErrorString)                                                                          \
  X(hiprtcVersion)
#define JITCACHE_HIPRTC_MEMBER(fn) decltype(&::fn) fn = nullptr;
    JITCACHE_HIPRTC_PASSED(JITCACHE_HIPRTC_MEMBER)
#undef JITCACHE_HIPRTC_MEMBER
    std::string file; ///< the library hipRTC was opened from
  };

  static const Real* real() {
    return rtc::OpenOnce<Real>::get(open);
  }

  static const rtc::FrontEnd& front_end();
  using Interposer = rtc::Interposer<Api>;
  /// The Get*Size/Get* pairs, in a table exit never destroys (calls may come during exit).
  static const auto& outputs() {
    static constexpr std::array<Interposer::OutputGetters, 2> table{{
        {"Code", &Real::hiprtcGetCodeSize, &Real::hiprtcGetCode},
        {"ProgramLog", &Real::hiprtcGetProgramLogSize, &Real::hiprtcGetProgramLog},
    }};
    return table;
  }

private:
  static const Real* open();
};

} // namespace jitcache::hiprtc
