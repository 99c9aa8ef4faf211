// libjitcache-hiprtc: hipRTC's C API, answered through jitcache (interposers/rtc) with what
// hiprtc_front_end.hpp says of hipRTC.

#include "interposers/hiprtc/hiprtc_front_end.hpp"

#define JITCACHE_API extern "C" __attribute__((visibility("default")))

namespace jitcache::hiprtc {

namespace {

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
// The library's answer: remembered, so that asking it opens no hipRTC (LibraryAnswers).
JITCACHE_API hiprtcResult hiprtcVersion(int* major, int* minor) {
  return I::version(major, minor, &Real::hiprtcVersion);
}
