// One measurement of loading a CUDA kernel, in this fresh process, printed as one JSON line.
// compare.py runs it many times and reports medians. CUDA context creation is done before the
// clock starts in every mode. With --launch SPEC (one letter per kernel argument: f a float, i an
// int of 256, k an int of 32, p a device buffer allocated before the clock), the clock stops after
// one launch of the function (one block of 256 threads) has completed (cuCtxSynchronize): the time
// from "I have the source" to "the first launch completed".
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
//   bench_cuda library CUBIN FUNCTION
//       no cache code: read CUBIN, cuLibraryLoadData, cuLibraryGetKernel (launched as a
//       CUfunction in the current context). CUDA_MODULE_LOADING (lazy, eager) applies to both.
//   bench_cuda headers KERNEL.cu FUNCTION [--expression]
//       the files the key is built from, one per line (the headers a peer's key must digest).
//   bench_cuda include-dirs
//       the toolkit include directories jitcache gives NVRTC, one per line (for CuPy's options).
#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_key.hpp"
#include "core/support/clock.hpp"

#include <jitcache/cuda.hpp>

#include <cstdio>
#include <dlfcn.h>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

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

// A kernel's arguments as --launch SPEC says, in storage that outlives the launch.
struct LaunchArgs {
  std::vector<float> floats;
  std::vector<int> ints;
  std::vector<CUdeviceptr> pointers;
  std::vector<void*> params;
};

LaunchArgs launch_args(const cuda::DriverApi& api, const std::string& spec) {
  LaunchArgs args;
  args.floats.reserve(spec.size());
  args.ints.reserve(spec.size());
  args.pointers.reserve(spec.size());
  for (char c : spec) {
    if (c == 'f') {
      args.floats.push_back(1.0f);
      args.params.push_back(&args.floats.back());
    } else if (c == 'i' || c == 'k') {
      args.ints.push_back(c == 'i' ? 256 : 32);
      args.params.push_back(&args.ints.back());
    } else if (c == 'p') {
      CUdeviceptr buffer = 0;
      if (api.cuMemAlloc(&buffer, 1 << 20) != CUDA_SUCCESS)
        die("cannot allocate a buffer");
      args.pointers.push_back(buffer);
      args.params.push_back(&args.pointers.back());
    } else if (c != ' ' && c != ',') {
      die(std::string("unknown --launch letter ") + c);
    }
  }
  return args;
}

// One launch of `f` (one block of 256 threads), waited for.
void launch_once(const cuda::DriverApi& api, CUfunction f, LaunchArgs& args) {
  if (api.cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, nullptr, args.params.data(), nullptr) !=
          CUDA_SUCCESS ||
      api.cuCtxSynchronize() != CUDA_SUCCESS)
    die("the launch failed");
}

// The driver's library API (CUDA 12.0 on), looked up in the libcuda jitcache opened.
struct LibraryApi {
  decltype(&::cuLibraryLoadData) load = nullptr;
  decltype(&::cuLibraryGetKernel) kernel = nullptr;
};

LibraryApi library_api() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  LibraryApi api;
  if (lib) {
    api.load = reinterpret_cast<decltype(api.load)>(dlsym(lib, "cuLibraryLoadData"));
    api.kernel = reinterpret_cast<decltype(api.kernel)>(dlsym(lib, "cuLibraryGetKernel"));
  }
  if (!api.load || !api.kernel)
    die("the driver has no cuLibraryLoadData");
  return api;
}

} // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "include-dirs") {
    for (const auto& dir : cuda::toolkit_include_dirs())
      std::printf("%s\n", dir.c_str());
    return 0;
  }
  if (argc < 4)
    die("usage: bench_cuda cold|warm|key|export|floor|library|headers ARGS (see bench_cuda.cpp)");
  const std::string mode = argv[1], file = argv[2], function = argv[3];
  bool expression = false;
  std::string cubin_out;
  std::optional<std::string> launch;
  for (int i = 4; i < argc; ++i) {
    if (std::string(argv[i]) == "--expression")
      expression = true;
    else if (std::string(argv[i]) == "--launch" && i + 1 < argc)
      launch = argv[++i];
    else
      cubin_out = argv[i];
  }
  if (mode == "headers") {
    auto tools = cuda::toolchain();
    if (!tools)
      die(tools.error().message);
    auto target = cuda::arch_target(**tools, "sm_90");
    if (!target)
      die(target.error().message);
    const auto deps = cuda::make_key(**tools, *target, Config::from_environment(),
                                     program_of(file, function, expression))
                          .second;
    for (const auto& stamp : deps.read)
      std::printf("%s\n", stamp.path.c_str());
    return 0;
  }
  std::string device;
  const cuda::DriverApi& api = make_context(device);
  LaunchArgs args = launch ? launch_args(api, *launch) : LaunchArgs{};

  if (mode == "floor" || mode == "library") {
    const LibraryApi library = mode == "library" ? library_api() : LibraryApi{};
    const Stopwatch clock;
    const std::string cubin = read_file(file);
    CUfunction f = nullptr;
    if (mode == "floor") {
      CUmodule module = nullptr;
      if (api.cuModuleLoadData(&module, cubin.data()) != CUDA_SUCCESS ||
          api.cuModuleGetFunction(&f, module, function.c_str()) != CUDA_SUCCESS)
        die("cannot load " + file);
    } else {
      CUlibrary lib = nullptr;
      CUkernel kernel = nullptr;
      if (library.load(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0) !=
              CUDA_SUCCESS ||
          library.kernel(&kernel, lib, function.c_str()) != CUDA_SUCCESS)
        die("cannot load " + file + " as a library");
      f = reinterpret_cast<CUfunction>(kernel); // a CUkernel launches as a CUfunction
    }
    if (launch)
      launch_once(api, f, args);
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
  if (launch)
    launch_once(api, *f, args);
  const double ms = clock.ms();
  print(mode, device, ms, &module->info, open_ms);
  return 0;
}
