// The tuning database on PoCL (kernels/matmul_tuned.cl through examples/tuned_matmul): per
// problem size, the tuned choice against the declared default and the heuristic (medians of
// alternated runs), what tuning cost (wall time, compiles), and what the kernel cache saves
// when the same candidates are tuned again for the next problem (their programs are hits).
//
//   POCL_KERNEL_CACHE=0 build/bench/opencl/bench_tuning [--sizes 64,128,256] [--runs 9]
//                                                       [--kernels DIR]
// (PoCL's own cache off, so that the first problem's compiles are cold.)
// Prints one JSON object per size, then a table.
#include "bench/tuning_report.hpp"
#include "examples/tuned_matmul.hpp"

#include <filesystem>
#include <iostream>
#include <unistd.h>

int main(int argc, char** argv) {
  using namespace jitcache;
  const bench::TuningArguments args = bench::tuning_arguments(argc, argv, {{64, 128, 256}});
  const auto read = examples::matmul_source(args.kernels);
  if (!read) {
    std::cerr << read.error().message << " (--kernels DIR)\n";
    return 1;
  }

  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  clGetPlatformIDs(1, &platform, nullptr);
  clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr);
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, nullptr);
  char pattern[] = "/tmp/bench_tuning_XXXXXX";
  const std::filesystem::path dir = mkdtemp(pattern);
  // The candidates' programs stay in the memory tier: storing a PoCL binary compiles every
  // kernel of the program again, which would run beside the measurements. (So the records are
  // measured, not kept: one warning says so.)
  Cache cache(
      Config::from_variables({{"JITCACHE_DIR", dir.string()}, {"JITCACHE_DISABLE", "opencl"}}));
  auto dev = opencl::tuning_device(device);
  if (!dev) {
    std::cerr << dev.error().message << "\n";
    return 1;
  }
  nlohmann::json rows = nlohmann::json::array();
  for (int n : args.sizes) {
    examples::MatmulProblem problem(cache, context, device, n, n, n, *read);
    rows.push_back(bench::tuning_row(cache, "opencl", examples::matmul_family(), *dev, n,
                                     problem.problem(),
                                     problem.trials(examples::matmul_candidates()), args.runs));
    std::cout << rows.back().dump() << std::endl;
  }
  bench::print_tuning_table(rows);
  clReleaseContext(context);
  cache.flush();
  std::filesystem::remove_all(dir);
  return 0;
}
