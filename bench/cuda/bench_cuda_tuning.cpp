// The tuning database on the GPU (kernels/matmul_tuned.cu through examples/cuda_matmul): per
// problem size, the tuned choice against the declared default and the heuristic (medians of
// alternated runs, each a launch and cuCtxSynchronize), what tuning cost (wall time, NVRTC
// compiles), and what the kernel cache saves when the same candidates are tuned again for the
// next problem (their modules are hits).
//
//   build/bench/cuda/bench_cuda_tuning [--sizes 256,512,1024,2048,4096] [--runs 21]
//                                      [--kernels DIR]
// Prints the device, one JSON object per size, then a table. Exit 1 without a GPU.
#include "backends/cuda/cuda_api.hpp"
#include "bench/tuning_report.hpp"
#include "examples/cuda_matmul.hpp"

#include <filesystem>
#include <iostream>
#include <unistd.h>

int main(int argc, char** argv) {
  using namespace jitcache;
  const bench::TuningArguments args =
      bench::tuning_arguments(argc, argv, {{256, 512, 1024, 2048, 4096}, 21});
  const auto read = examples::matmul_source(args.kernels, "matmul_tuned.cu");
  if (!read) {
    std::cerr << read.error().message << " (--kernels DIR)\n";
    return 1;
  }
  auto api = cuda::driver();
  CUdevice gpu = 0;
  CUcontext context = nullptr;
  if (!api || (*api)->cuDeviceGet(&gpu, 0) != CUDA_SUCCESS ||
      (*api)->cuDevicePrimaryCtxRetain(&context, gpu) != CUDA_SUCCESS ||
      (*api)->cuCtxSetCurrent(context) != CUDA_SUCCESS) {
    std::cerr << "no GPU: " << (api ? "no device 0" : api.error().message) << "\n";
    return 1;
  }
  char pattern[] = "/tmp/bench_cuda_tuning_XXXXXX";
  const std::filesystem::path dir = mkdtemp(pattern);
  {
    Cache cache(Config::from_variables({{"JITCACHE_DIR", dir.string()}}));
    auto dev = cuda::tuning_device();
    if (!dev) {
      std::cerr << dev.error().message << "\n";
      return 1;
    }
    std::cout << "device: " << dev->name << "\n";
    nlohmann::json rows = nlohmann::json::array();
    for (int n : args.sizes) {
      examples::CudaMatmulProblem problem(cache, n, n, n, *read, args.kernels + "/matmul_tuned.cu");
      rows.push_back(bench::tuning_row(
          cache, "cuda", examples::cuda_matmul_family(), *dev, n, problem.problem(),
          problem.trials(examples::cuda_matmul_candidates()), args.runs));
      std::cout << rows.back().dump() << std::endl;
    }
    bench::print_tuning_table(rows);
    cache.flush();
  }
  (*api)->cuDevicePrimaryCtxRelease(gpu);
  std::filesystem::remove_all(dir);
  return 0;
}
