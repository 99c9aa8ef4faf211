// One process of the stress test (and of bench/core/many_processes.py): after a random delay,
// builds kernels 0..N-1 (generated from one template, so every one is a different key) on PoCL in
// an order drawn from SEED, runs each, checks its output, and prints one JSON line per kernel as
// soon as it is done:
//   {"kernel":3,"outcome":"miss","tier":"compile","build_ms":41.2,"ok":true}
// usage: stress_worker SEED KERNELS MAX_DELAY_MS [MODE]
//   MODE jitcache (default): through jitcache::opencl::build_program
//        pocl: clCreateProgramWithSource + clBuildProgram (PoCL's own cache, if on, applies;
//              outcome "unknown")
#include <jitcache/opencl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t k_items = 256;

std::string kernel_source(int i) {
  return "__kernel void scale_shift(__global const float* in, __global float* out) {\n"
         "  const size_t j = get_global_id(0);\n"
         "  out[j] = in[j] * " +
         std::to_string(i + 2) + ".0f + " + std::to_string(i) +
         ".0f;\n"
         "}\n";
}

// Runs kernel `i` from `program` and checks every output element.
bool runs_correctly(cl_context context, cl_device_id device, cl_program program, int i) {
  cl_int rc = CL_SUCCESS;
  std::vector<float> in(k_items), out(k_items, -1.0f);
  for (std::size_t j = 0; j < k_items; ++j)
    in[j] = static_cast<float>(j);
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &rc);
  cl_kernel kernel = clCreateKernel(program, "scale_shift", &rc);
  if (rc != CL_SUCCESS)
    return false;
  cl_mem a = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                            k_items * sizeof(float), in.data(), &rc);
  cl_mem b = clCreateBuffer(context, CL_MEM_WRITE_ONLY, k_items * sizeof(float), nullptr, &rc);
  clSetKernelArg(kernel, 0, sizeof a, &a);
  clSetKernelArg(kernel, 1, sizeof b, &b);
  const std::size_t global = k_items;
  rc = clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr);
  if (rc == CL_SUCCESS)
    rc = clEnqueueReadBuffer(queue, b, CL_TRUE, 0, k_items * sizeof(float), out.data(), 0, nullptr,
                             nullptr);
  clReleaseMemObject(a);
  clReleaseMemObject(b);
  clReleaseKernel(kernel);
  clReleaseCommandQueue(queue);
  if (rc != CL_SUCCESS)
    return false;
  for (std::size_t j = 0; j < k_items; ++j)
    if (out[j] != in[j] * static_cast<float>(i + 2) + static_cast<float>(i))
      return false;
  return true;
}

} // namespace

// Builds `source` for `device` without jitcache.
jitcache::Expected<cl_program> plain_build(cl_context context, cl_device_id device,
                                           const std::string& source) {
  const char* text = source.c_str();
  cl_int rc = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &rc);
  if (rc == CL_SUCCESS)
    rc = clBuildProgram(program, 1, &device, "", nullptr, nullptr);
  if (rc == CL_SUCCESS)
    return program;
  std::string log(4096, '\0');
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, log.size(), log.data(), nullptr);
  log.resize(std::min(log.find('\0'), log.find('\n')));
  for (char& c : log)
    if (c == '"' || c == '\\')
      c = '\'';
  return jitcache::Error(jitcache::ErrorCode::compile_failed,
                         "clBuildProgram failed: " + std::to_string(rc) + ": " + log);
}

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: stress_worker SEED KERNELS MAX_DELAY_MS [jitcache|pocl]\n");
    return 2;
  }
  const bool through_jitcache = argc == 4 || std::string(argv[4]) == "jitcache";
  std::mt19937 random(static_cast<unsigned>(std::atoi(argv[1])));
  const int kernels = std::atoi(argv[2]);
  const int max_delay = std::atoi(argv[3]);
  std::this_thread::sleep_for(std::chrono::milliseconds(
      std::uniform_int_distribution<int>(0, std::max(0, max_delay))(random)));

  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_int rc = CL_SUCCESS;
  if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS)
    return 3;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);
  if (rc != CL_SUCCESS)
    return 3;

  std::vector<int> order(static_cast<std::size_t>(kernels));
  for (int i = 0; i < kernels; ++i)
    order[static_cast<std::size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), random);
  int failures = 0;
  {
    jitcache::Cache cache;
    for (int i : order) {
      const auto start = std::chrono::steady_clock::now();
      jitcache::opencl::Program built;
      std::string error;
      if (through_jitcache) {
        auto program = jitcache::opencl::build_program(cache, context, device, kernel_source(i));
        if (program)
          built = *program;
        else
          error = program.error().message;
      } else {
        auto program = plain_build(context, device, kernel_source(i));
        if (program)
          built.program = *program;
        else
          error = program.error().message;
        built.info.tier = "unknown";
      }
      const double build_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      const bool ok = built.program && runs_correctly(context, device, built.program, i);
      failures += !ok;
      const char* outcome = !built.program     ? "error"
                            : through_jitcache ? jitcache::to_string(built.info.outcome)
                                               : "unknown";
      std::printf("{\"kernel\":%d,\"outcome\":\"%s\",\"tier\":\"%s\",\"build_ms\":%.2f,"
                  "\"ok\":%s}\n",
                  i, outcome, built.program ? built.info.tier.c_str() : error.c_str(), build_ms,
                  ok ? "true" : "false");
      std::fflush(stdout);
      if (built.program)
        clReleaseProgram(built.program);
    }
  }
  clReleaseContext(context);
  return failures == 0 ? 0 : 1;
}
