#include "interposers/nvrtc/nvrtc_front_end.hpp"

#include "backends/cuda/cuda_key.hpp"
#include "core/support/shared_library.hpp"
#include "interposers/rtc/real_library.hpp"
#include "interposers/rtc/rtc_backend.hpp"

#include <jitcache/version.hpp>

#include <string_view>

namespace jitcache {

namespace nvrtc {

const Api::Real* Api::open() {
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

namespace {

// The real NVRTC, opened.
Expected<const Api::Real*> opened_real() {
  if (const Api::Real* opened = Api::real())
    return opened;
  return Error(ErrorCode::runtime_missing, "NVRTC could not be opened");
}

// How the real NVRTC is found (Api::open's first soname and folder), for the record `kind`.
detail::LibrarySearch search(std::string_view kind) {
  return {kind, {JITCACHE_NVRTC_SONAME}, {JITCACHE_CUDA_LIBRARY_DIR}};
}

// The identity of the real NVRTC: key fields.
Expected<detail::ProbedLibraries<std::vector<std::pair<std::string, std::string>>>> probe() {
  auto opened = opened_real();
  if (!opened)
    return opened.error();
  auto toolchain = cuda::probe_toolchain((*opened)->nvrtc);
  if (!toolchain)
    return toolchain.error();
  return detail::ProbedLibraries<std::vector<std::pair<std::string, std::string>>>{
      {{"nvrtc_version", toolchain->version},
       {"nvrtc_build", toolchain->build},
       {"jitcache_version", k_version}},
      {(*opened)->nvrtc.file}};
}

// What nvrtcVersion, nvrtcGetNumSupportedArchs and nvrtcGetSupportedArchs answer.
Expected<detail::ProbedLibraries<rtc::LibraryAnswers>> ask_library() {
  auto opened = opened_real();
  if (!opened)
    return opened.error();
  auto says = cuda::ask_nvrtc((*opened)->nvrtc);
  if (!says)
    return says.error();
  return detail::ProbedLibraries<rtc::LibraryAnswers>{
      {says->major, says->minor, std::move(says->archs)}, {(*opened)->nvrtc.file}};
}

} // namespace

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
      search("nvrtc front-end identity"),
      probe,
      {search("nvrtc front-end answers"), ask_library}};
  return front_end;
}

} // namespace nvrtc

std::unique_ptr<detail::Backend> detail::make_nvrtc_backend() {
  return std::make_unique<rtc::FrontEndBackend<nvrtc::Api>>(make_cuda_backend());
}

} // namespace jitcache
