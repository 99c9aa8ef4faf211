#include "backends/cuda/cuda_compile.hpp"

#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/cuda_metadata.hpp"
#include "core/support/log.hpp"

#include <memory>

namespace jitcache::cuda {

namespace {

// Owns an nvrtcProgram for the length of one compile.
class ProgramHandle {
public:
  ProgramHandle(const NvrtcApi& api, nvrtcProgram program) : m_api(api), m_program(program) {}
  ~ProgramHandle() { m_api.nvrtcDestroyProgram(&m_program); }
  ProgramHandle(const ProgramHandle&) = delete;
  ProgramHandle& operator=(const ProgramHandle&) = delete;
  nvrtcProgram get() const { return m_program; }

private:
  const NvrtcApi& m_api;
  nvrtcProgram m_program;
};

Expected<std::string> program_log(const NvrtcApi& api, nvrtcProgram program,
                                  const std::string& name) {
  std::size_t size = 0;
  if (nvrtcResult rc = api.nvrtcGetProgramLogSize(program, &size); rc != NVRTC_SUCCESS)
    return nvrtc_error(api, "nvrtcGetProgramLogSize", rc, name);
  std::string log(size, '\0');
  if (nvrtcResult rc = api.nvrtcGetProgramLog(program, log.data()); rc != NVRTC_SUCCESS)
    return nvrtc_error(api, "nvrtcGetProgramLog", rc, name);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

// The compiled image: a cubin, or PTX text (without its terminating NUL: std::string supplies
// one when the driver reads it).
Expected<std::string> image(const NvrtcApi& api, nvrtcProgram program, bool ptx,
                            const std::string& name) {
  const auto get_size = ptx ? api.nvrtcGetPTXSize : api.nvrtcGetCUBINSize;
  const auto get = ptx ? api.nvrtcGetPTX : api.nvrtcGetCUBIN;
  std::size_t size = 0;
  if (nvrtcResult rc = get_size(program, &size); rc != NVRTC_SUCCESS)
    return nvrtc_error(api, ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize", rc, name);
  std::string out(size, '\0');
  if (nvrtcResult rc = get(program, out.data()); rc != NVRTC_SUCCESS)
    return nvrtc_error(api, ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN", rc, name);
  if (ptx && !out.empty() && out.back() == '\0')
    out.pop_back();
  return out;
}

} // namespace

Expected<Entry> compile_entry(const NvrtcApi& api, const Target& target, const Program& program) {
  std::vector<const char*> header_names, header_sources;
  for (const Header& header : program.headers) {
    header_names.push_back(header.name.c_str());
    header_sources.push_back(header.content.c_str());
  }
  nvrtcProgram raw = nullptr;
  if (nvrtcResult rc = api.nvrtcCreateProgram(&raw, program.source.c_str(), program.name.c_str(),
                                              static_cast<int>(header_names.size()),
                                              header_sources.data(), header_names.data());
      rc != NVRTC_SUCCESS)
    return nvrtc_error(api, "nvrtcCreateProgram", rc, program.name);
  const ProgramHandle handle(api, raw);
  for (const std::string& expression : program.name_expressions)
    if (nvrtcResult rc = api.nvrtcAddNameExpression(handle.get(), expression.c_str());
        rc != NVRTC_SUCCESS)
      return nvrtc_error(api, "nvrtcAddNameExpression", rc, program.name + " (" + expression + ")");

  std::vector<std::string> extra;
  for (const auto& dir : toolkit_include_dirs())
    extra.push_back("-I" + dir.string());
  extra.push_back("-arch=" + target.arch);
  std::vector<const char*> options;
  for (const std::string& option : program.options)
    options.push_back(option.c_str());
  for (const std::string& option : extra)
    options.push_back(option.c_str());

  const nvrtcResult compiled =
      api.nvrtcCompileProgram(handle.get(), static_cast<int>(options.size()), options.data());
  auto log = program_log(api, handle.get(), program.name);
  if (!log)
    return std::move(log).error();
  if (compiled == NVRTC_ERROR_COMPILATION || compiled == NVRTC_ERROR_INVALID_OPTION)
    return nvrtc_error(api, "nvrtcCompileProgram", compiled, program.name,
                       ErrorCode::compile_failed, std::move(*log));
  if (compiled != NVRTC_SUCCESS)
    return nvrtc_error(api, "nvrtcCompileProgram", compiled, program.name);
  if (!log->empty())
    log::debug("NVRTC log for " + program.name + ":\n" + *log);

  Metadata metadata{target.ptx ? "ptx" : "cubin", target.arch, {}};
  for (const std::string& expression : program.name_expressions) {
    const char* lowered = nullptr;
    if (nvrtcResult rc = api.nvrtcGetLoweredName(handle.get(), expression.c_str(), &lowered);
        rc != NVRTC_SUCCESS)
      return nvrtc_error(api, "nvrtcGetLoweredName", rc, program.name + " (" + expression + ")");
    metadata.lowered_names.emplace(expression, lowered);
  }
  auto binary = image(api, handle.get(), target.ptx, program.name);
  if (!binary)
    return std::move(binary).error();
  Entry entry;
  entry.backend = "cuda";
  entry.payload = std::move(*binary);
  entry.metadata = encode_metadata(metadata);
  return entry;
}

} // namespace jitcache::cuda
