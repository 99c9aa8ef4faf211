// libjitcache-hiprtc: hipRTC's C API, answered through jitcache (interposers/rtc). Only what
// differs from NVRTC is here: the names, the types, the outputs, the options it does not model.

#include "backends/hip/hip_api.hpp"
#include "backends/hip/hip_key.hpp"
#include "core/support/shared_library.hpp"
#include "interposers/rtc/real_library.hpp"
#include "interposers/rtc/rtc_interposer.hpp"

#include <hip/hiprtc.h>

#define JITCACHE_API extern "C" __attribute__((visibility("default")))

namespace jitcache::hiprtc {

namespace {

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
    static const Real* const opened = open();
    return opened;
  }

  static const rtc::FrontEnd& front_end();
  using Interposer = rtc::Interposer<Api>;
  static const std::vector<Interposer::OutputGetters>& outputs() {
    static const std::vector<Interposer::OutputGetters> table = {
        {"Code", &Real::hiprtcGetCodeSize, &Real::hiprtcGetCode},
        {"ProgramLog", &Real::hiprtcGetProgramLogSize, &Real::hiprtcGetProgramLog},
    };
    return table;
  }

private:
  static const Real* open() {
    // hipRTC was part of libamdhip64 until ROCm 6 split it into libhiprtc.
    auto library = rtc::open_real_library({hip::k_hiprtc_soname, hip::k_runtime_soname}, {},
                                          "hiprtcCompileProgram");
    if (!library)
      return nullptr;
    auto* real = new Real; // never freed: calls may come during exit
    detail::SymbolLoader symbols(library->handle);
    symbols.load(real->create, "hiprtcCreateProgram");
    symbols.load(real->destroy, "hiprtcDestroyProgram");
    symbols.load(real->add_name_expression, "hiprtcAddNameExpression");
    symbols.load(real->compile, "hiprtcCompileProgram");
    symbols.load(real->lowered_name, "hiprtcGetLoweredName");
#define JITCACHE_HIPRTC_LOAD(fn) symbols.load(real->fn, #fn);
    JITCACHE_HIPRTC_PASSED(JITCACHE_HIPRTC_LOAD)
#undef JITCACHE_HIPRTC_LOAD
    real->file = library->file;
    if (!symbols.missing().empty()) {
      delete real;
      return nullptr;
    }
    return real;
  }
};

using Fields = std::vector<std::pair<std::string, std::string>>;

// The HIP backend's identity of hipRTC (its library, comgr's), when the hipRTC it reads is the
// one the front-end passes calls to.
Expected<detail::ProbedLibraries<Fields>> probe() {
  const Api::Real* opened = Api::real();
  if (!opened)
    return Error(ErrorCode::runtime_missing, "hipRTC could not be opened");
  auto fields = hip::toolchain_fields();
  if (!fields)
    return fields.error();
  const hip::RuntimeApi& runtime = **hip::runtime(); // opened: toolchain_fields() succeeded
  if (runtime.hiprtc_file.path != opened->file)
    return Error(ErrorCode::runtime_error,
                 "the hipRTC the HIP backend identifies (" + runtime.hiprtc_file.path +
                     ") is not the one the front-end calls (" + opened->file + ")");
  return detail::ProbedLibraries<Fields>{
      *fields, {runtime.runtime_file.path, runtime.hiprtc_file.path, (**hip::comgr()).file.path}};
}

const rtc::FrontEnd& Api::front_end() {
  static const rtc::FrontEnd front_end{
      "hiprtc",
      "hipRTC",
      {{"-I", "-I"},
       {"-isystem", "-isystem"},
       {"-iquote", "-iquote"},
       {"-idirafter", "-idirafter"}},
      // Files read besides include directories, files written, and a target taken from the
      // device.
      {"-include", "--include", "-save-temps", "--save-temps", "-ftime-trace", "-M",
       "--offload-arch=native", "-fembed-bitcode"},
      {"--offload-arch=", "--gpu-architecture=", "--cuda-gpu-arch="},
      // Without a target, hipRTC compiles for the current device: a request names its own.
      "",
      false,
      hip::library_search(),
      probe};
  return front_end;
}

using I = Api::Interposer;
using Real = Api::Real;

} // namespace

} // namespace jitcache::hiprtc

using jitcache::hiprtc::I;
using jitcache::hiprtc::Real;

JITCACHE_API hiprtcResult hiprtcCreateProgram(hiprtcProgram* prog, const char* src,
                                              const char* name, int numHeaders,
                                              const char** headers, const char** includeNames) {
  return I::create(prog, src, name, numHeaders, headers, includeNames);
}
JITCACHE_API hiprtcResult hiprtcDestroyProgram(hiprtcProgram* prog) {
  return I::destroy(prog);
}
JITCACHE_API hiprtcResult hiprtcAddNameExpression(hiprtcProgram prog, const char* name_expression) {
  return I::add_name_expression(prog, name_expression);
}
JITCACHE_API hiprtcResult hiprtcCompileProgram(hiprtcProgram prog, int numOptions,
                                               const char** options) {
  return I::compile(prog, numOptions, options);
}
JITCACHE_API hiprtcResult hiprtcGetLoweredName(hiprtcProgram prog, const char* name_expression,
                                               const char** lowered_name) {
  return I::lowered_name(prog, name_expression, lowered_name);
}
JITCACHE_API hiprtcResult hiprtcGetCodeSize(hiprtcProgram prog, size_t* size) {
  return I::output_size(prog, "Code", size);
}
JITCACHE_API hiprtcResult hiprtcGetCode(hiprtcProgram prog, char* code) {
  return I::output(prog, "Code", code);
}
JITCACHE_API hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram prog, size_t* size) {
  return I::output_size(prog, "ProgramLog", size);
}
JITCACHE_API hiprtcResult hiprtcGetProgramLog(hiprtcProgram prog, char* log) {
  return I::output(prog, "ProgramLog", log);
}

// The calls the front-end does not model: the real hipRTC's answers.
JITCACHE_API const char* hiprtcGetErrorString(hiprtcResult result) {
  return I::pass([&](const Real& real) { return real.hiprtcGetErrorString(result); },
                 [] { return "Invalid HIPRTC error code"; });
}
JITCACHE_API hiprtcResult hiprtcVersion(int* major, int* minor) {
  return I::pass([&](const Real& real) { return real.hiprtcVersion(major, minor); },
                 [] { return HIPRTC_ERROR_INTERNAL_ERROR; });
}
