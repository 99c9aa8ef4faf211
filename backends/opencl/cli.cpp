// The OpenCL backend as the command-line tool sees it: device enumeration, one build, facts.
#include "backends/opencl/opencl_compile.hpp"
#include "backends/opencl/opencl_error.hpp"
#include "backends/opencl/opencl_key.hpp"
#include "backends/opencl/opencl_metadata.hpp"
#include "backends/opencl/opencl_runtime.hpp"
#include "core/engine/backend.hpp"
#include "core/engine/pipeline.hpp"
#include "core/record/request_replay.hpp"
#include "core/support/clock.hpp"

#include <jitcache/opencl.hpp>

namespace jitcache {

using detail::Backend;
using detail::BuildRequest;
using detail::Stopwatch;

namespace {

// Every OpenCL device of every platform, in platform order: the CLI's --device index.
Expected<std::vector<cl_device_id>> find_devices() {
  cl_uint count = 0;
  cl_int rc = clGetPlatformIDs(0, nullptr, &count);
  if (rc != CL_SUCCESS || count == 0)
    return opencl::cl_error("clGetPlatformIDs (no OpenCL platform installed?)", rc,
                            ErrorCode::runtime_missing);
  std::vector<cl_platform_id> platforms(count);
  clGetPlatformIDs(count, platforms.data(), nullptr);
  std::vector<cl_device_id> devices;
  for (cl_platform_id platform : platforms) {
    cl_uint n = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0)
      continue;
    const std::size_t at = devices.size();
    devices.resize(at + n);
    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, devices.data() + at, nullptr);
  }
  if (devices.empty())
    return Error(ErrorCode::no_device, "no OpenCL device found on any platform");
  return devices;
}

// find_devices(), once per process: the first clGetPlatformIDs is not safe to make from
// several threads at once (`jitcache warm` replays on several).
const Expected<std::vector<cl_device_id>>& all_devices() {
  static const Expected<std::vector<cl_device_id>> devices = find_devices();
  return devices;
}

Expected<cl_device_id> device_at(int index) {
  auto devices = all_devices();
  if (!devices)
    return std::move(devices).error();
  if (index < 0 || static_cast<std::size_t>(index) >= devices->size())
    return Error(ErrorCode::invalid_argument,
                 "--device " + std::to_string(index) + " does not exist (" +
                     std::to_string(devices->size()) + " OpenCL device(s): 0.." +
                     std::to_string(devices->size() - 1) + ")");
  return (*devices)[static_cast<std::size_t>(index)];
}

// The device at `index` and a context of its own for it (the caller releases the context).
Expected<std::pair<cl_device_id, cl_context>> device_context(int index) {
  auto device = device_at(index);
  if (!device)
    return std::move(device).error();
  cl_int rc = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &*device, nullptr, nullptr, &rc);
  if (rc != CL_SUCCESS)
    return opencl::cl_error("clCreateContext", rc);
  return std::make_pair(*device, context);
}

class OpenclBackend final : public Backend {
public:
  std::string name() const override { return "opencl"; }

  Expected<BuildInfo> build(Cache& cache, const BuildRequest& request) override {
    if (!request.arch.empty())
      return Error(
          ErrorCode::unsupported,
          "--arch is not supported by the OpenCL backend (it builds for a present device)");
    auto opened = device_context(request.device);
    if (!opened)
      return std::move(opened).error();
    const auto [device, context] = *opened;
    // build_program(), with the file's name stored with the entry (the key does not cover it).
    opencl::Runtime runtime(cache, context, device, request.source, request.options, request.file);
    auto answer = detail::serve_request(cache, runtime);
    clReleaseContext(context);
    if (!answer)
      return std::move(answer).error();
    return std::move(answer->info);
  }

  Expected<std::uint64_t> store(Cache& cache, const BuildRequest& request,
                                const Key& key) override {
    auto opened = device_context(request.device);
    if (!opened)
      return std::move(opened).error();
    const auto [device, context] = *opened;
    // Over PoCL's warm cache the build is a hit there; reading the binary compiles the kernels
    // the requesting process never launched (and holds those it did).
    const Stopwatch clock;
    auto program = opencl::from_source(context, device, request.source, request.options);
    if (!program) {
      clReleaseContext(context);
      return std::move(program).error();
    }
    const Stopwatch reading;
    auto entry = opencl::entry_of(*program, request.file);
    clReleaseProgram(*program);
    clReleaseContext(context);
    if (!entry)
      return std::move(entry).error();
    // What a hit saves: the requester's compile plus the kernels' compile reading the binary
    // did, not this build's (a hit in PoCL's cache, which the requester's compile warmed). A
    // request that does not say (an older jitcache's) has this whole store's time.
    const std::uint64_t compile_ns =
        request.compile_ns ? request.compile_ns + reading.ns() : clock.ns();
    const std::uint64_t bytes = entry->payload.size();
    entry->compile_ns = compile_ns;
    cache.store(key, std::move(*entry));
    return bytes;
  }

  bool claims_target(const std::string& target) const override {
    static_cast<void>(target);
    return false;
  }

  detail::EntryDescription describe(std::string_view metadata) const override {
    auto decoded = opencl::decode_metadata(metadata);
    if (!decoded)
      return {};
    return {std::move(decoded->source), std::move(decoded->kernels)};
  }

  Expected<void> check_target(const std::string& target) override {
    return Error(ErrorCode::unsupported, "the OpenCL backend builds for a present device "
                                         "(--device N), not for a target such as " +
                                             target);
  }

  Expected<BuildInfo> replay(Cache& cache, const detail::RequestRecord& record, const std::string&,
                             int index, const std::filesystem::path& scratch) override {
    if (record.options.size() != 1)
      return Error(ErrorCode::invalid_argument, "an OpenCL request has one option string");
    auto device = device_at(index);
    if (!device)
      return std::move(device).error();
    std::string options = record.options.front();
    auto key = opencl::make_key(cache.config(), *device, record.source, options);
    if (key && key->digest.hex() != record.key) {
      // The headers are not where the options say (another machine or directory): the
      // recorded ones, written where the include paths now point.
      const std::filesystem::path dir = scratch / record.key;
      if (auto written = detail::write_headers(record, dir); !written)
        return std::move(written).error();
      options = detail::options_including(options, dir);
      key = opencl::make_key(cache.config(), *device, record.source, options);
    }
    if (!key)
      return std::move(key).error();
    if (auto same = detail::check_replayed_key(record, *key); !same)
      return std::move(same).error();
    return build(cache, BuildRequest{record.name, record.source, options, index, ""});
  }

  Expected<Key> key(const Config& config, const BuildRequest& request) override {
    auto device = device_at(request.device);
    if (!device)
      return std::move(device).error();
    return opencl::make_key(config, *device, request.source, request.options);
  }

  std::vector<std::pair<std::string, std::string>> facts(const Config& config) override {
    std::vector<std::pair<std::string, std::string>> out;
    auto devices = all_devices();
    if (!devices) {
      out.emplace_back("runtime", devices.error().message);
    } else {
      for (std::size_t i = 0; i < devices->size(); ++i) {
        auto id = opencl::identity((*devices)[i]);
        std::string text = id ? id->device_name : id.error().message;
        if (id)
          for (const auto& [name, value] : id->toolchain)
            if (name == "platform_version")
              text += " (" + value + ")";
        out.emplace_back("device " + std::to_string(i), text);
      }
    }
    // PoCL's own kernel cache is listed with the other runtime caches (core/engine/runtime_caches).
    auto setting = config.variables.find("POCL_KERNEL_CACHE");
    out.emplace_back("POCL_KERNEL_CACHE", setting == config.variables.end()
                                              ? "unset (PoCL caches by default)"
                                              : setting->second);
    return out;
  }
};

} // namespace

std::unique_ptr<Backend> detail::make_opencl_backend() {
  return std::make_unique<OpenclBackend>();
}

} // namespace jitcache
