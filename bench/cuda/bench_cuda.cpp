// One measurement of loading a CUDA kernel, in this fresh process, printed as one JSON line.
// compare.py runs it many times and reports medians. CUDA context creation is done before the
// clock starts in every mode.
//
//   bench_cuda cold|warm KERNEL.cu FUNCTION [--expression]
//       Cache (from the environment: JITCACHE_DIR) + load_module + the function. cold expects an
//       empty cache, warm a filled one. Also reports open_ms (the Cache's construction) and
//       load_module's own timings.
//   bench_cuda key KERNEL.cu FUNCTION [--expression]
//       only the key load_module builds (header scan + hashing), NVRTC opened before the clock.
//   bench_cuda export KERNEL.cu FUNCTION [--expression] CUBIN
//       writes the cubin load_module uses on this device to CUBIN (untimed).
//   bench_cuda floor CUBIN FUNCTION
//       no cache code: read CUBIN, cuModuleLoadData, cuModuleGetFunction.
//   bench_cuda include-dirs
//       the toolkit include directories jitcache gives NVRTC, one per line (for CuPy's options).
#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_key.hpp"
#include "core/support/clock.hpp"

#include <jitcache/cuda.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

using namespace jitcache;
using jitcache::detail::Stopwatch;

[[noreturn]] void die(const std::string& message) {
  std::cerr << "bench_cuda: " << message << "\n";
  std::exit(1);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    die("cannot read " + path);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Device 0's primary context, current and fully created (the clock starts after this).
const cuda::DriverApi& make_context(std::string& device_name) {
  auto api = cuda::driver();
  if (!api)
    die(api.error().message);
  CUdevice device = 0;
  CUcontext context = nullptr;
  char name[256] = {};
  if ((*api)->cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      (*api)->cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
      (*api)->cuCtxSetCurrent(context) != CUDA_SUCCESS ||
      (*api)->cuCtxSynchronize() != CUDA_SUCCESS)
    die("cannot create a context on device 0");
  (*api)->cuDeviceGetName(name, sizeof name, device);
  device_name = name;
  return **api;
}

cuda::Program program_of(const std::string& file, const std::string& function, bool expression) {
  cuda::Program program;
  program.source = read_file(file);
  program.name = file;
  if (expression)
    program.name_expressions = {function};
  return program;
}

void print(const std::string& mode, const std::string& device, double ms, const BuildInfo* info,
           double open_ms = 0) {
  std::printf("{\"mode\": \"%s\", \"device\": \"%s\", \"ms\": %.4f", mode.c_str(), device.c_str(),
              ms);
  if (info)
    std::printf(", \"outcome\": \"%s\", \"tier\": \"%s\", \"compile_ms\": %.4f, \"load_ms\": %.4f, "
                "\"total_ms\": %.4f, \"open_ms\": %.4f, \"bytes\": %llu",
                to_string(info->outcome), info->tier.c_str(), info->compile_ms, info->load_ms,
                info->total_ms, open_ms, static_cast<unsigned long long>(info->bytes));
  std::printf("}\n");
}

} // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "include-dirs") {
    for (const auto& dir : cuda::toolkit_include_dirs())
      std::printf("%s\n", dir.c_str());
    return 0;
  }
  if (argc < 4)
    die("usage: bench_cuda cold|warm|key|export|floor ARGS (see bench_cuda.cpp)");
  const std::string mode = argv[1], file = argv[2], function = argv[3];
  bool expression = false;
  std::string cubin_out;
  for (int i = 4; i < argc; ++i) {
    if (std::string(argv[i]) == "--expression")
      expression = true;
    else
      cubin_out = argv[i];
  }
  std::string device;
  const cuda::DriverApi& api = make_context(device);

  if (mode == "floor") {
    const Stopwatch clock;
    const std::string cubin = read_file(file);
    CUmodule module = nullptr;
    CUfunction f = nullptr;
    if (api.cuModuleLoadData(&module, cubin.data()) != CUDA_SUCCESS ||
        api.cuModuleGetFunction(&f, module, function.c_str()) != CUDA_SUCCESS)
      die("cannot load " + file);
    print(mode, device, clock.ms(), nullptr);
    return 0;
  }
  if (mode == "export") {
    if (cubin_out.empty())
      die("usage: bench_cuda export KERNEL.cu FUNCTION [--expression] CUBIN");
    Cache cache;
    auto module = cuda::load_module(cache, program_of(file, function, expression));
    if (!module)
      die(module.error().message + "\n" + module.error().log);
    auto found =
        cache.lookup(*cuda::make_key(cache.config(), program_of(file, function, expression)));
    if (!found)
      die("the entry is not in the cache");
    std::ofstream(cubin_out, std::ios::binary) << found->entry.payload;
    // The floor loads by the symbol name: the lowered one for a name expression.
    auto lowered = module->lowered_names.find(function);
    std::printf("%s\n", lowered == module->lowered_names.end() ? function.c_str()
                                                               : lowered->second.c_str());
    return 0;
  }
  if (mode != "cold" && mode != "warm" && mode != "key")
    die("unknown mode " + mode);
  const cuda::Program program = program_of(file, function, expression);
  if (mode == "key" && !cuda::toolchain())
    die("NVRTC cannot be opened");
  const Stopwatch clock;
  if (mode == "key") {
    if (!cuda::make_key(Config::from_environment(), program))
      die("no key");
    print(mode, device, clock.ms(), nullptr);
    return 0;
  }
  Cache cache;
  const double open_ms = clock.ms(); // opening the user tier
  auto module = cuda::load_module(cache, program);
  if (!module)
    die(module.error().message + "\n" + module.error().log);
  auto f = module->function(function);
  if (!f)
    die(f.error().message);
  const double ms = clock.ms();
  print(mode, device, ms, &module->info, open_ms);
  return 0;
}
