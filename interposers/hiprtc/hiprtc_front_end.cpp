#include "interposers/hiprtc/hiprtc_front_end.hpp"

#include "backends/hip/hip_api.hpp"
#include "backends/hip/hip_key.hpp"
#include "core/support/shared_library.hpp"
#include "interposers/rtc/real_library.hpp"
#include "interposers/rtc/rtc_backend.hpp"

namespace jitcache {

namespace hiprtc {

const Api::Real* Api::open() {
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

namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// The real hipRTC, opened.
Expected<const Api::Real*> opened_real() {
  if (const Api::Real* opened = Api::real())
    return opened;
  return Error(ErrorCode::runtime_missing, "hipRTC could not be opened");
}

// The HIP backend's identity of hipRTC (its library, comgr's), when the hipRTC it reads is the
// one the front-end passes calls to.
Expected<detail::ProbedLibraries<Fields>> probe() {
  auto real = opened_real();
  if (!real)
    return real.error();
  const Api::Real* opened = *real;
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

// What hiprtcVersion answers.
Expected<detail::ProbedLibraries<rtc::LibraryAnswers>> ask_library() {
  auto opened = opened_real();
  if (!opened)
    return opened.error();
  rtc::LibraryAnswers answers;
  if (const hiprtcResult rc = (*opened)->hiprtcVersion(&answers.major, &answers.minor);
      rc != HIPRTC_SUCCESS)
    return Error(ErrorCode::runtime_error,
                 "hiprtcVersion failed: " + std::string((*opened)->hiprtcGetErrorString(rc)));
  return detail::ProbedLibraries<rtc::LibraryAnswers>{std::move(answers), {(*opened)->file}};
}

// hip::library_search() with the answers' record kind.
detail::LibrarySearch answers_search() {
  detail::LibrarySearch search = hip::library_search();
  search.kind = "hiprtc front-end answers";
  return search;
}

} // namespace

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
      probe,
      {answers_search(), ask_library}};
  return front_end;
}

} // namespace hiprtc

std::unique_ptr<detail::Backend> detail::make_hiprtc_backend() {
  return std::make_unique<rtc::FrontEndBackend<hiprtc::Api>>(make_hip_backend());
}

} // namespace jitcache
