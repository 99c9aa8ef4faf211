// What the C API adds to a memory-tier hit: jitcache_cl_build_program against
// jitcache::opencl::build_program, the same request on PoCL, both through libjitcache.so.
// Rounds alternate between the two; prints the median of each one's per-round mean time per call
// and the median of the paired per-round differences (target: the C API adds at most 1 us).
// Usage: bench_c_api [KERNEL.cl] (its folder is the -I folder; default kernels/vector_ops.cl)
#include "bench/median.hpp"

#include <jitcache/jitcache.h>
#include <jitcache/opencl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace {

using jitcache::bench::median;

using clock_type = std::chrono::steady_clock;
constexpr int k_rounds = 41;
constexpr int k_calls = 5000;

template <typename Call> double mean_us(Call&& call) {
  const auto t = clock_type::now();
  for (int i = 0; i < k_calls; ++i)
    call();
  return std::chrono::duration<double, std::micro>(clock_type::now() - t).count() / k_calls;
}

} // namespace

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : JITCACHE_KERNELS "/vector_ops.cl";
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string source = text.str();
  const std::string options = "-I " + std::filesystem::path(path).parent_path().string();

  cl_platform_id platform;
  cl_device_id device;
  if (source.empty() || clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS) {
    std::fprintf(stderr, "bench_c_api: no OpenCL device or no kernel at %s\n", path);
    return 1;
  }
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, nullptr);

  // Memory-only caches: what is measured is the memory tier, not the disk.
  jitcache::Cache cpp_cache(jitcache::Config::from_variables({}));
  jitcache_settings settings;
  jitcache_settings_init(&settings);
  jitcache_cache* c_cache = nullptr;
  if (jitcache_open(&settings, &c_cache) != JITCACHE_OK) {
    std::fprintf(stderr, "bench_c_api: %s\n", jitcache_last_error());
    return 1;
  }

  const auto cpp_call = [&] {
    auto built = jitcache::opencl::build_program(cpp_cache, context, device, source, options);
    if (!built) {
      std::fprintf(stderr, "bench_c_api: %s\n", built.error().message.c_str());
      std::exit(1);
    }
    clReleaseProgram(built->program);
  };
  const auto c_call = [&] {
    cl_program program;
    jitcache_info info;
    if (jitcache_cl_build_program(c_cache, context, device, source.data(), source.size(),
                                  options.c_str(), &program, &info) != JITCACHE_OK) {
      std::fprintf(stderr, "bench_c_api: %s\n", jitcache_last_error());
      std::exit(1);
    }
    clReleaseProgram(program);
  };
  cpp_call(); // the misses: compile once each
  c_call();

  std::vector<double> cpp_us, c_us, diff_us;
  for (int r = 0; r < k_rounds; ++r) {
    cpp_us.push_back(mean_us(cpp_call));
    c_us.push_back(mean_us(c_call));
    diff_us.push_back(c_us.back() - cpp_us.back());
  }
  std::printf("memory-tier hit of %s on PoCL, medians of %d rounds x %d calls:\n", path, k_rounds,
              k_calls);
  std::printf("  C++ API  %.3f us\n  C API    %.3f us\n  C - C++  %+.3f us (paired rounds)\n",
              median(cpp_us), median(c_us), median(diff_us));
  jitcache_close(c_cache);
  clReleaseContext(context);
  return 0;
}
