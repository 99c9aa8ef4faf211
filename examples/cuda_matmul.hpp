#pragma once

// The tuning database's example on CUDA (examples/matmul.hpp): kernels/matmul_tuned.cu, the
// tiled matrix multiply of the OpenCL example, its TILE and WPT -D options compiled through
// NVRTC by the kernel cache, timed on the GPU. Used by tests/cuda/cuda_tuning_test.cpp and
// bench/cuda/bench_cuda_tuning.cpp.

#include "examples/matmul.hpp"

#include <jitcache/cuda.hpp>
#include <jitcache/tuning.hpp>

#include <optional>
#include <string>
#include <vector>

namespace jitcache::examples {

/// The family "matmul_tuned_cuda": parameters TILE and WPT, declared default TILE=16, WPT=1
/// (the textbook choice), and a heuristic: TILE=32, WPT=4 for problems of 512 and more whose
/// M, N and K are multiples of 32.
tuning::Family cuda_matmul_family();

/// TILE in {8, 16, 32, 64} and WPT in {1, 2, 4, 8}, at most 1024 threads a block.
std::vector<tuning::Parameters> cuda_matmul_candidates();

/// One problem in the current CUDA context: the inputs (examples::matmul_inputs) and the output
/// in device memory, and trials that load the kernel through `cache` with the candidate's -D
/// options (ordinary cache entries). The context must outlive it. When the
/// device memory cannot be had, every trial fails with the driver's error.
class CudaMatmulProblem : public MatmulTrials {
public:
  /// `source`: kernels/matmul_tuned.cu's text; `name`: NVRTC's program name for it.
  CudaMatmulProblem(Cache& cache, int m, int n, int k, std::string source,
                    std::string name = "matmul_tuned.cu");
  ~CudaMatmulProblem() override;

private:
  /// Loads the module (a compile error skips the candidate; a TILE that does not divide M, N and
  /// K, a WPT that does not divide TILE, or more than 1024 threads a block is refused before
  /// compiling); the trial's run launches it and synchronizes, its output copies C back.
  Expected<tuning::Trial> prepare(const tuning::Parameters& parameters,
                                  const std::string& defines) override;

  Cache& m_cache;
  cuda::Program m_program;
  std::optional<Error> m_memory_error; ///< why the device memory could not be had
  CUdeviceptr m_a = 0, m_b = 0, m_c = 0;
  std::vector<cuda::Module> m_modules; ///< one per prepared candidate, kept loaded
};

} // namespace jitcache::examples
