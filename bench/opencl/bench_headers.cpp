// What exact header keys cost: a hit and a miss's dependency discovery of a 10 KB source with 0,
// 10 and 30 headers, against the alternative of keying the preprocessed source (running `cpp`).
// Prints a Markdown table of medians (each over many repetitions, 7 rounds).
//
// The hit measured is a repeated request in one process: the request shortcut, vouched for by
// the stamps of the headers. Files changed within the last 2 seconds cannot vouch for their
// content (too_recent looks at mtime and ctime, and ctime cannot be set back), so the headers
// are written first and the benchmark waits that long before measuring; otherwise every call
// would build its key again. The table says how many calls had to stat the headers.
#include <jitcache/opencl.hpp>

#include "core/engine/cache_core.hpp"
#include "tests/support/temp_dir.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct Median {
  double wall_us = 0, cpu_us = 0; ///< cpu: this thread's CPU time, without waits for a core
};

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

// Medians over 7 rounds of the mean time of one call, in microseconds.
Median median_us(int calls_per_round, const std::function<void()>& fn) {
  std::vector<double> rounds, cpu_rounds;
  for (int r = 0; r < 7; ++r) {
    const double cpu = thread_cpu_us();
    const auto t = clock_type::now();
    for (int i = 0; i < calls_per_round; ++i)
      fn();
    rounds.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t).count() /
                     calls_per_round);
    cpu_rounds.push_back((thread_cpu_us() - cpu) / calls_per_round);
  }
  std::sort(rounds.begin(), rounds.end());
  std::sort(cpu_rounds.begin(), cpu_rounds.end());
  return {rounds[rounds.size() / 2], cpu_rounds[cpu_rounds.size() / 2]};
}

// A 10 KB source that includes `n` headers of realistic size (~1.5 KB of macros and inline
// helpers).
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
  // 10 KB, as bench_opencl's repeat mode: the request hash reads all of it on every call.
  source += "//" + std::string(10240 - source.size() - 3, 'x') + "\n";
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
  const std::vector<int> counts{0, 10, 30};
  std::vector<std::unique_ptr<jitcache::test::TempDir>> dirs;
  std::vector<std::string> sources;
  for (int n : counts) {
    dirs.push_back(std::make_unique<jitcache::test::TempDir>());
    sources.push_back(make_headers(dirs.back()->path(), n));
    std::ofstream(dirs.back()->path() / "k.cl") << sources.back();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2100)); // let the stamps settle
  std::printf("Hit: the same build_program call repeated in one process (the request shortcut; "
              "headers written 2.1 s before, so their stamps can vouch for them).\n\n");
  std::printf("| headers | hit (memory tier), us | hit, CPU us | hit cost over 0 headers, us | "
              "key building (dependency discovery), us | preprocessing instead (`cpp`), us | "
              "hits that stat the headers |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  double base = 0;
  for (std::size_t c = 0; c < counts.size(); ++c) {
    const int n = counts[c];
    const auto& dir = dirs[c]->path();
    const std::string& source = sources[c];
    const std::string options = "-I " + dir.string();
    jitcache::Cache cache(
        jitcache::Config::from_variables({{"JITCACHE_DIR", (dir / "cache").string()}}));
    auto first = jitcache::opencl::build_program(cache, context, device, source, options);
    if (!first) {
      std::fprintf(stderr, "bench_headers: %s\n", first.error().message.c_str());
      return 1;
    }
    clReleaseProgram(first->program);
    cache.flush(); // the miss's store runs on a background thread: not while measuring
    const auto& handles = jitcache::detail::core_of(cache).handles();
    const std::uint64_t stats_before = handles.stat_checks();
    long calls = 0, memory_hits = 0;
    const Median hit = median_us(2000, [&] {
      auto p = jitcache::opencl::build_program(cache, context, device, source, options);
      ++calls;
      memory_hits += p->info.tier == "memory";
      clReleaseProgram(p->program);
    });
    if (memory_hits != calls)
      std::fprintf(stderr, "bench_headers: %ld of %ld calls were not memory hits\n",
                   calls - memory_hits, calls);
    const std::uint64_t stat_hits = handles.stat_checks() - stats_before;
    if (n == 0)
      base = hit.wall_us;
    const double key = median_us(2000, [&] {
                         (void)jitcache::opencl::make_key(cache.config(), device, source, options);
                       }).wall_us;
    const std::string cpp =
        "cpp -P " + options + " " + (dir / "k.cl").string() + " > /dev/null 2>&1";
    const double preprocess = median_us(10, [&] {
                                if (std::system(cpp.c_str()) != 0)
                                  std::fprintf(stderr, "bench_headers: cpp failed\n");
                              }).wall_us;
    std::printf("| %d | %.1f | %.1f | %.1f | %.1f | %.0f | %llu of %ld |\n", n, hit.wall_us,
                hit.cpu_us, hit.wall_us - base, key, preprocess,
                static_cast<unsigned long long>(stat_hits), calls);
  }
  clReleaseContext(context);
  return 0;
}
