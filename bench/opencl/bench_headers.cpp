// What exact header keys cost: a hit and a miss's dependency discovery with 0, 10 and 30
// headers, against the alternative of keying the preprocessed source (running `cpp`).
// Prints a Markdown table of medians (each over many repetitions, 7 rounds).
#include <jitcache/opencl.hpp>

#include "tests/support/temp_dir.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

// Median over 7 rounds of the mean time of one call, in microseconds.
double median_us(int calls_per_round, const std::function<void()>& fn) {
  std::vector<double> rounds;
  for (int r = 0; r < 7; ++r) {
    const auto t = clock_type::now();
    for (int i = 0; i < calls_per_round; ++i)
      fn();
    rounds.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t).count() /
                     calls_per_round);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

// A source that includes `n` headers of realistic size (~1.5 KB of macros and inline helpers).
std::string make_headers(const std::filesystem::path& dir, int n) {
  std::string source;
  for (int i = 0; i < n; ++i) {
    std::ofstream h(dir / ("h" + std::to_string(i) + ".h"));
    h << "#pragma once\n";
    for (int j = 0; j < 40; ++j)
      h << "#define H" << i << "_C" << j << " (" << i * j << ")\n";
    h << "inline int h" << i << "_f(int x) { return x * " << i + 1 << " + H" << i << "_C3; }\n";
    source += "#include \"h" + std::to_string(i) + ".h\"\n";
  }
  source += "__kernel void k(__global int* x) { x[get_global_id(0)] += 1; }\n";
  return source;
}

} // namespace

int main() {
  cl_platform_id platform;
  cl_device_id device;
  if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS) {
    std::fprintf(stderr, "bench_headers: no OpenCL device\n");
    return 1;
  }
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, nullptr);
  std::printf("| headers | hit (memory tier), us | hit cost over 0 headers, us | key building "
              "(dependency discovery), us | preprocessing instead (`cpp`), us |\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  double base = 0;
  for (int n : {0, 10, 30}) {
    jitcache::test::TempDir dir;
    const std::string source = make_headers(dir.path(), n);
    const std::string options = "-I " + dir.path().string();
    std::ofstream(dir.path() / "k.cl") << source;
    jitcache::Cache cache(
        jitcache::Config::from_variables({{"JITCACHE_DIR", (dir.path() / "cache").string()}}));
    auto first = jitcache::opencl::build_program(cache, context, device, source, options);
    if (!first) {
      std::fprintf(stderr, "bench_headers: %s\n", first.error().message.c_str());
      return 1;
    }
    clReleaseProgram(first->program);
    const double hit = median_us(2000, [&] {
      auto p = jitcache::opencl::build_program(cache, context, device, source, options);
      clReleaseProgram(p->program);
    });
    if (n == 0)
      base = hit;
    const double key = median_us(2000, [&] {
      (void)jitcache::opencl::make_key(cache.config(), device, source, options);
    });
    const std::string cpp = "cpp -P " + options + " " + (dir.path() / "k.cl").string() +
                            " > /dev/null 2>&1";
    const double preprocess = median_us(10, [&] {
      if (std::system(cpp.c_str()) != 0)
        std::fprintf(stderr, "bench_headers: cpp failed\n");
    });
    std::printf("| %d | %.1f | %.1f | %.1f | %.0f |\n", n, hit, hit - base, key, preprocess);
  }
  clReleaseContext(context);
  return 0;
}
