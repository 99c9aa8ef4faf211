// An application's start, for bench/opencl/embedded_start.py: from main() to its first kernel
// ready (PoCL context, vector_ops.cl built through a Cache from the environment, clCreateKernel
// of saxpy). Built twice from this file: bench_start, and bench_start_embedded, which embeds the
// package serving this machine's PoCL (jitcache_embed_packages, made at build time from the same
// file and options: BENCH_KERNELS is the source tree's kernels/).
// Usage: bench_start. Prints one JSON line: ms (main to kernel ready), context_ms (main to the
// context made: PoCL's start, the same in every mode), outcome, tier.
#include <jitcache/opencl.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

[[noreturn]] void die(const std::string& what) {
  std::cerr << "bench_start: " << what << "\n";
  std::exit(1);
}

} // namespace

int main() {
  const auto start = std::chrono::steady_clock::now();
  const std::string dir = BENCH_KERNELS;
  std::ifstream in(dir + "/vector_ops.cl", std::ios::binary);
  std::ostringstream source;
  source << in.rdbuf();
  cl_platform_id platform;
  cl_device_id device;
  if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS)
    die("no OpenCL device");
  cl_int rc = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);
  if (rc != CL_SUCCESS)
    die("clCreateContext failed");
  const auto context_ready = std::chrono::steady_clock::now();
  jitcache::Cache cache;
  auto built = jitcache::opencl::build_program(cache, context, device, source.str(), "-I " + dir);
  if (!built)
    die(built.error().message);
  cl_kernel kernel = clCreateKernel(built->program, "saxpy", &rc);
  if (rc != CL_SUCCESS)
    die("clCreateKernel failed");
  using Ms = std::chrono::duration<double, std::milli>;
  const double ms = Ms(std::chrono::steady_clock::now() - start).count();
  std::cout << nlohmann::json{{"ms", ms},
                              {"context_ms", Ms(context_ready - start).count()},
                              {"outcome", jitcache::to_string(built->info.outcome)},
                              {"tier", built->info.tier}}
                   .dump()
            << std::endl;
  clReleaseKernel(kernel);
  clReleaseProgram(built->program);
  clReleaseContext(context);
  return 0;
}
