// libjitcache-nvrtc: NVRTC's C API, answered through jitcache (interposers/rtc). Only what differs
// from hipRTC is here: the names, the types, the outputs, the options it does not model.

#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_key.hpp"
#include "core/support/shared_library.hpp"
#include "interposers/rtc/real_library.hpp"
#include "interposers/rtc/rtc_interposer.hpp"

#include <jitcache/version.hpp>

#include <dlfcn.h>
#include <nvrtc.h>

#define JITCACHE_API extern "C" __attribute__((visibility("default")))

namespace jitcache::nvrtc {

namespace {

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
    static const Real* const opened = open();
    return opened;
  }

  static const rtc::FrontEnd& front_end();
  using Interposer = rtc::Interposer<Api>;
  static const std::vector<Interposer::OutputGetters>& outputs() {
    static const std::vector<Interposer::OutputGetters> table = {
        {"PTX", &Real::nvrtcGetPTXSize, &Real::nvrtcGetPTX},
        {"CUBIN", &Real::nvrtcGetCUBINSize, &Real::nvrtcGetCUBIN},
        {"LTOIR", &Real::nvrtcGetLTOIRSize, &Real::nvrtcGetLTOIR},
        {"OptiXIR", &Real::nvrtcGetOptiXIRSize, &Real::nvrtcGetOptiXIR},
        {"ProgramLog", &Real::nvrtcGetProgramLogSize, &Real::nvrtcGetProgramLog},
    };
    return table;
  }

private:
  static const Real* open() {
    auto library = rtc::open_real_library({JITCACHE_NVRTC_SONAME, "libnvrtc.so"},
                                          {JITCACHE_CUDA_LIBRARY_DIR}, "nvrtcCompileProgram");
    if (!library)
      return nullptr;
    auto* real = new Real; // never freed: calls may come during exit
    detail::SymbolLoader symbols(library->handle);
#define JITCACHE_NVRTC_LOAD(fn) symbols.load(real->fn, #fn);
    JITCACHE_NVRTC_PASSED(JITCACHE_NVRTC_LOAD)
#undef JITCACHE_NVRTC_LOAD
#define JITCACHE_NVRTC_LOAD(fn) symbols.load(real->nvrtc.fn, #fn);
    JITCACHE_CUDA_NVRTC_FUNCTIONS(JITCACHE_NVRTC_LOAD)
#undef JITCACHE_NVRTC_LOAD
    real->create = real->nvrtc.nvrtcCreateProgram;
    real->destroy = real->nvrtc.nvrtcDestroyProgram;
    real->add_name_expression = real->nvrtc.nvrtcAddNameExpression;
    real->compile = real->nvrtc.nvrtcCompileProgram;
    real->lowered_name = real->nvrtc.nvrtcGetLoweredName;
    real->nvrtc.file = library->file;
    if (!symbols.missing().empty()) { // an NVRTC older than the front-end's headers
      delete real;
      return nullptr;
    }
    return real;
  }
};

const rtc::FrontEnd& Api::front_end() {
  static const rtc::FrontEnd front_end{
      "nvrtc",
      "NVRTC",
      {{"--include-path=", "-I"}, {"-I", "-I"}},
      // Files read besides include directories (pre-included and precompiled headers), files
      // written (timings, PCH), and a callback that a stored answer would never call.
      {"--pre-include", "-include", "--pch", "-pch", "--create-pch", "-create-pch", "--use-pch",
       "-use-pch", "--pch-dir", "-pch-dir", "--time", "-time", "--fdevice-time-trace",
       "-fdevice-time-trace", "--dump", "-dump"},
      {"-arch=", "--gpu-architecture="},
      JITCACHE_NVRTC_DEFAULT_ARCH,
      true,
      {"nvrtc front-end identity", {JITCACHE_NVRTC_SONAME}, {JITCACHE_CUDA_LIBRARY_DIR}},
      []() -> Expected<detail::ProbedLibraries<std::vector<std::pair<std::string, std::string>>>> {
        const Real* opened = real();
        if (!opened)
          return Error(ErrorCode::runtime_missing, "NVRTC could not be opened");
        auto toolchain = cuda::probe_toolchain(opened->nvrtc);
        if (!toolchain)
          return toolchain.error();
        return detail::ProbedLibraries<std::vector<std::pair<std::string, std::string>>>{
            {{"nvrtc_version", toolchain->version},
             {"nvrtc_build", toolchain->build},
             {"jitcache_version", k_version}},
            {opened->nvrtc.file}};
      }};
  return front_end;
}

using I = Api::Interposer;
using Real = Api::Real;

} // namespace

} // namespace jitcache::nvrtc

using jitcache::nvrtc::I;
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

// The calls the front-end does not model: the real NVRTC's answers.
JITCACHE_API const char* nvrtcGetErrorString(nvrtcResult result) {
  return I::pass([&](const Real& real) { return real.nvrtcGetErrorString(result); },
                 [] { return "NVRTC_ERROR unknown"; });
}
JITCACHE_API nvrtcResult nvrtcVersion(int* major, int* minor) {
  return I::pass([&](const Real& real) { return real.nvrtcVersion(major, minor); },
                 [] { return NVRTC_ERROR_INTERNAL_ERROR; });
}
JITCACHE_API nvrtcResult nvrtcGetNumSupportedArchs(int* numArchs) {
  return I::pass([&](const Real& real) { return real.nvrtcGetNumSupportedArchs(numArchs); },
                 [] { return NVRTC_ERROR_INTERNAL_ERROR; });
}
JITCACHE_API nvrtcResult nvrtcGetSupportedArchs(int* supportedArchs) {
  return I::pass([&](const Real& real) { return real.nvrtcGetSupportedArchs(supportedArchs); },
                 [] { return NVRTC_ERROR_INTERNAL_ERROR; });
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
