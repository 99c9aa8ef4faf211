// libjitcache-nvrtc: NVRTC's C API, answered through jitcache (interposers/rtc) with what
// nvrtc_front_end.hpp says of NVRTC.

#include "interposers/nvrtc/nvrtc_front_end.hpp"

#include <algorithm>
#include <optional>

#define JITCACHE_API extern "C" __attribute__((visibility("default")))

namespace jitcache::nvrtc {

namespace {

using I = Api::Interposer;
using Real = Api::Real;
using rtc::LibraryAnswers;

} // namespace

} // namespace jitcache::nvrtc

using jitcache::nvrtc::I;
using jitcache::nvrtc::LibraryAnswers;
using jitcache::nvrtc::Real;

JITCACHE_API nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char* name,
                                            int numHeaders, const char* const* headers,
                                            const char* const* includeNames) {
  return I::create(prog, src, name, numHeaders, headers, includeNames);
}
JITCACHE_API nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  return I::destroy(prog);
}
JITCACHE_API nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char* const name) {
  return I::add_name_expression(prog, name);
}
JITCACHE_API nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions,
                                             const char* const* options) {
  return I::compile(prog, numOptions, options);
}
JITCACHE_API nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char* const name_expression,
                                             const char** lowered_name) {
  return I::lowered_name(prog, name_expression, lowered_name);
}

#define JITCACHE_NVRTC_OUTPUT(Name)                                                                \
  JITCACHE_API nvrtcResult nvrtcGet##Name##Size(nvrtcProgram prog, size_t* size) {                 \
    return I::output_size(prog, #Name, size);                                                      \
  }                                                                                                \
  JITCACHE_API nvrtcResult nvrtcGet##Name(nvrtcProgram prog, char* bytes) {                        \
    return I::output(prog, #Name, bytes);                                                          \
  }
JITCACHE_NVRTC_OUTPUT(PTX)
JITCACHE_NVRTC_OUTPUT(CUBIN)
JITCACHE_NVRTC_OUTPUT(LTOIR)
JITCACHE_NVRTC_OUTPUT(OptiXIR)
JITCACHE_NVRTC_OUTPUT(ProgramLog)
#undef JITCACHE_NVRTC_OUTPUT

// The library's answers: remembered, so that asking them opens no NVRTC (LibraryAnswers).
JITCACHE_API nvrtcResult nvrtcVersion(int* major, int* minor) {
  return I::version(major, minor, &Real::nvrtcVersion);
}
JITCACHE_API nvrtcResult nvrtcGetNumSupportedArchs(int* numArchs) {
  return I::known(
      [&](const LibraryAnswers& known) -> std::optional<nvrtcResult> {
        if (!numArchs)
          return std::nullopt;
        *numArchs = static_cast<int>(known.targets.size());
        return NVRTC_SUCCESS;
      },
      [&](const Real& real) { return real.nvrtcGetNumSupportedArchs(numArchs); });
}
JITCACHE_API nvrtcResult nvrtcGetSupportedArchs(int* supportedArchs) {
  return I::known(
      [&](const LibraryAnswers& known) -> std::optional<nvrtcResult> {
        if (!supportedArchs)
          return std::nullopt;
        std::copy(known.targets.begin(), known.targets.end(), supportedArchs);
        return NVRTC_SUCCESS;
      },
      [&](const Real& real) { return real.nvrtcGetSupportedArchs(supportedArchs); });
}

// The calls the front-end does not model: the real NVRTC's answers.
JITCACHE_API const char* nvrtcGetErrorString(nvrtcResult result) {
  return I::pass([&](const Real& real) { return real.nvrtcGetErrorString(result); },
                 [] { return "NVRTC_ERROR unknown"; });
}
JITCACHE_API nvrtcResult nvrtcGetPCHHeapSize(size_t* ret) {
  return I::pass([&](const Real& real) { return real.nvrtcGetPCHHeapSize(ret); },
                 [] { return NVRTC_ERROR_INTERNAL_ERROR; });
}
JITCACHE_API nvrtcResult nvrtcSetPCHHeapSize(size_t size) {
  return I::pass([&](const Real& real) { return real.nvrtcSetPCHHeapSize(size); },
                 [] { return NVRTC_ERROR_INTERNAL_ERROR; });
}
JITCACHE_API nvrtcResult nvrtcGetPCHCreateStatus(nvrtcProgram prog) {
  return I::on_program(
      prog, [&](const Real& real, nvrtcProgram own) { return real.nvrtcGetPCHCreateStatus(own); });
}
JITCACHE_API nvrtcResult nvrtcGetPCHHeapSizeRequired(nvrtcProgram prog, size_t* size) {
  return I::on_program(prog, [&](const Real& real, nvrtcProgram own) {
    return real.nvrtcGetPCHHeapSizeRequired(own, size);
  });
}
JITCACHE_API nvrtcResult nvrtcSetFlowCallback(nvrtcProgram prog, int (*callback)(void*, void*),
                                              void* payload) {
  return I::on_program(prog, [&](const Real& real, nvrtcProgram own) {
    return real.nvrtcSetFlowCallback(own, callback, payload);
  });
}
