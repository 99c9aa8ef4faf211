#include "backends/hip/hip_compile.hpp"

#include "backends/hip/hip_api.hpp"
#include "backends/hip/hip_error.hpp"
#include "backends/hip/hip_metadata.hpp"

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace jitcache::hip {

namespace {

// Destroys a hipRTC program on every path out.
class ProgramHandle {
public:
  ProgramHandle(const RuntimeApi& api, hiprtcProgram program) : m_api(api), m_program(program) {}
  ~ProgramHandle() { m_api.hiprtcDestroyProgram(&m_program); }
  ProgramHandle(const ProgramHandle&) = delete;
  ProgramHandle& operator=(const ProgramHandle&) = delete;

private:
  const RuntimeApi& m_api;
  hiprtcProgram m_program;
};

std::string program_log(const RuntimeApi& api, hiprtcProgram program) {
  std::size_t size = 0;
  if (api.hiprtcGetProgramLogSize(program, &size) != HIPRTC_SUCCESS || size == 0)
    return {};
  std::string log(size, '\0');
  if (api.hiprtcGetProgramLog(program, log.data()) != HIPRTC_SUCCESS)
    return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

} // namespace

Expected<Entry> compile_entry(const RuntimeApi& api, std::string_view target,
                              const Program& program) {
  // hipRTC initialises the HIP runtime on its first call; do that where a hang is bounded.
  if (auto ready = runtime_ready(); !ready)
    return ready.error();
  const std::string what = program.name + " (" + std::string(target) + ")";

  std::vector<const char*> header_names, header_texts;
  for (const Header& header : program.headers) {
    header_names.push_back(header.name.c_str());
    header_texts.push_back(header.content.c_str());
  }
  hiprtcProgram handle = nullptr;
  if (hiprtcResult rc = api.hiprtcCreateProgram(
          &handle, program.source.c_str(), program.name.c_str(),
          static_cast<int>(header_names.size()), header_texts.data(), header_names.data());
      rc != HIPRTC_SUCCESS)
    return hiprtc_error(api, "hiprtcCreateProgram", rc, what);
  const ProgramHandle owner(api, handle);
  for (const std::string& expression : program.name_expressions)
    if (hiprtcResult rc = api.hiprtcAddNameExpression(handle, expression.c_str());
        rc != HIPRTC_SUCCESS)
      return hiprtc_error(api, "hiprtcAddNameExpression", rc, what + " '" + expression + "'",
                          ErrorCode::invalid_argument);

  const std::string target_option = "--offload-arch=" + std::string(target);
  std::vector<const char*> argv;
  for (const std::string& option : program.options)
    argv.push_back(option.c_str());
  argv.push_back(target_option.c_str());
  // Debian's hipRTC 5.2 crashes inside hiprtcCompileProgram when two threads compile at once
  // (seen here: a SIGSEGV in libamdhip64 in about 4 runs of 10 with 5 concurrent targets), so
  // compiles are serialised in the process; lookups and loads still run in parallel.
  static std::mutex compile_mutex;
  std::unique_lock<std::mutex> one_at_a_time(compile_mutex);
  const hiprtcResult compiled =
      api.hiprtcCompileProgram(handle, static_cast<int>(argv.size()), argv.data());
  one_at_a_time.unlock();
  if (hiprtcResult rc = compiled; rc != HIPRTC_SUCCESS)
    return hiprtc_error(api, "hiprtcCompileProgram", rc, what,
                        rc == HIPRTC_ERROR_COMPILATION || rc == HIPRTC_ERROR_INVALID_OPTION
                            ? ErrorCode::compile_failed
                            : ErrorCode::runtime_error,
                        program_log(api, handle));

  std::size_t size = 0;
  if (hiprtcResult rc = api.hiprtcGetCodeSize(handle, &size); rc != HIPRTC_SUCCESS)
    return hiprtc_error(api, "hiprtcGetCodeSize", rc, what);
  Entry entry;
  entry.payload.resize(size);
  if (hiprtcResult rc = api.hiprtcGetCode(handle, entry.payload.data()); rc != HIPRTC_SUCCESS)
    return hiprtc_error(api, "hiprtcGetCode", rc, what);
  if (auto ok = check_code_object(entry.payload, target); !ok)
    return Error(ErrorCode::runtime_error,
                 "hipRTC's output for " + what + " cannot be loaded: " + ok.error().message);

  std::map<std::string, std::string> lowered;
  for (const std::string& expression : program.name_expressions) {
    const char* symbol = nullptr;
    if (hiprtcResult rc = api.hiprtcGetLoweredName(handle, expression.c_str(), &symbol);
        rc != HIPRTC_SUCCESS || !symbol)
      return hiprtc_error(api, "hiprtcGetLoweredName", rc, what + " '" + expression + "'",
                          ErrorCode::compile_failed);
    lowered.emplace(expression, symbol);
  }
  entry.metadata = encode_lowered_names(lowered);
  return entry;
}

} // namespace jitcache::hip
