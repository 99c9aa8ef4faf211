#include "backends/opencl/opencl_compile.hpp"

#include "backends/opencl/opencl_error.hpp"
#include "backends/opencl/opencl_metadata.hpp"

#include <cctype>

namespace jitcache::opencl {

namespace {

// Whether `options` can be handed to clBuildProgram: a `-D` or `-I` with nothing after it is
// refused (PoCL reads past the end of its option list there and crashes the process; every
// OpenCL runtime rejects it anyway). PoCL takes the token after a -D or -I as its argument, so
// only the last whitespace-separated token matters.
Expected<void> check_options(std::string_view options) {
  std::size_t end = options.size();
  while (end > 0 && std::isspace(static_cast<unsigned char>(options[end - 1])))
    --end;
  std::size_t begin = end;
  while (begin > 0 && !std::isspace(static_cast<unsigned char>(options[begin - 1])))
    --begin;
  const std::string_view last = options.substr(begin, end - begin);
  if (last == "-D" || last == "-I")
    return Error(ErrorCode::invalid_argument, "the OpenCL build options end with " +
                                                  std::string(last) + " and nothing after it (" +
                                                  (last == "-D" ? "a macro name" : "a directory") +
                                                  " is needed)");
  return {};
}

// The build log of `program` for `device`, every byte the runtime gives (its NUL included);
// empty when it cannot be read.
std::string raw_log(cl_program program, cl_device_id device) {
  std::size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS)
    return {};
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) !=
      CL_SUCCESS)
    return {};
  return log;
}

// The log a program built for one device keeps in its entry: raw_log() for that device, empty
// when it says nothing (PoCL's logs of builds without warnings are a lone NUL).
std::string kept_log(cl_program program) {
  cl_device_id device = nullptr;
  if (clGetProgramInfo(program, CL_PROGRAM_DEVICES, sizeof device, &device, nullptr) != CL_SUCCESS)
    return {};
  std::string log = raw_log(program, device);
  return log.find_first_not_of('\0') == std::string::npos ? std::string() : log;
}

} // namespace

std::string build_log(cl_program program, cl_device_id device) {
  std::string log = raw_log(program, device);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

Expected<cl_program> build(cl_program program, cl_device_id device, const std::string& options,
                           ErrorCode failure) {
  if (auto checked = check_options(options); !checked) {
    clReleaseProgram(program);
    return std::move(checked).error();
  }
  const cl_int rc = clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
  if (rc == CL_SUCCESS)
    return program;
  std::string log = build_log(program, device);
  clReleaseProgram(program);
  auto error = cl_error("clBuildProgram", rc, failure, log);
  if (failure == ErrorCode::compile_failed && !log.empty())
    error.message += "; build log:\n" + log;
  return error;
}

Expected<cl_program> from_source(cl_context context, cl_device_id device, std::string_view source,
                                 const std::string& options) {
  const char* text = source.data();
  const std::size_t length = source.size();
  cl_int rc = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context, 1, &text, &length, &rc);
  if (rc != CL_SUCCESS)
    return cl_error("clCreateProgramWithSource", rc);
  return build(program, device, options, ErrorCode::compile_failed);
}

Expected<cl_program> from_binary(cl_context context, cl_device_id device, std::string_view binary,
                                 const std::string& options) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
  const std::size_t length = binary.size();
  cl_int status = CL_SUCCESS, rc = CL_SUCCESS;
  cl_program program =
      clCreateProgramWithBinary(context, 1, &device, &length, &bytes, &status, &rc);
  if (rc != CL_SUCCESS || status != CL_SUCCESS) {
    if (program)
      clReleaseProgram(program);
    return cl_error("clCreateProgramWithBinary", rc != CL_SUCCESS ? rc : status,
                    ErrorCode::load_failed);
  }
  return build(program, device, options, ErrorCode::load_failed);
}

Expected<std::string> read_binary(cl_program program) {
  std::size_t size = 0;
  if (cl_int rc = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
      rc != CL_SUCCESS)
    return cl_error("clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)", rc);
  if (size == 0)
    return Error(ErrorCode::runtime_error, "the OpenCL runtime returned an empty program binary");
  std::string binary(size, '\0');
  unsigned char* where = reinterpret_cast<unsigned char*>(binary.data());
  if (cl_int rc = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof where, &where, nullptr);
      rc != CL_SUCCESS)
    return cl_error("clGetProgramInfo(CL_PROGRAM_BINARIES)", rc);
  return binary;
}

Expected<Entry> entry_of(cl_program program, const std::string& name) {
  auto binary = read_binary(program);
  if (!binary)
    return std::move(binary).error();
  return Entry{"opencl", std::move(*binary),
               encode_metadata({name, kernel_names(program), kept_log(program)})};
}

} // namespace jitcache::opencl
