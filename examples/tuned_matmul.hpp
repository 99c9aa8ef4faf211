#pragma once

// The tuning database's example on OpenCL (examples/matmul.hpp): kernels/matmul_tuned.cl, a tiled
// matrix multiply whose tile size (TILE) and work per item (WPT) are -D options, tuned per
// problem size. Used by tests/opencl/tuning_test.cpp, bench/opencl/bench_tuning.cpp and the
// runner examples/matmul_tuner.cpp.

#include "examples/matmul.hpp"

#include <jitcache/opencl.hpp>
#include <jitcache/tuning.hpp>

#include <string>
#include <vector>

namespace jitcache::examples {

/// The family: parameters TILE and WPT, declared default TILE=8, WPT=1, and a heuristic (a
/// larger tile, with more work per item, for larger problems).
tuning::Family matmul_family();

/// One problem on one OpenCL device: the inputs (deterministic pseudo-random values) and the
/// output in device buffers, and trials that build the kernel through `cache` with the
/// candidate's -D options added to `options` (ordinary cache entries). The context and device
/// must outlive it.
class MatmulProblem : public MatmulTrials {
public:
  MatmulProblem(Cache& cache, cl_context context, cl_device_id device, int m, int n, int k,
                std::string source, std::string options = {});
  ~MatmulProblem() override;

private:
  /// Builds the program (a compile error skips the candidate; a TILE that does not divide M, N
  /// and K, or a WPT that does not divide TILE, is refused before building); the trial's run
  /// launches it and waits, its output reads C.
  Expected<tuning::Trial> prepare(const tuning::Parameters& parameters,
                                  const std::string& defines) override;

  Cache& m_cache;
  cl_context m_context;
  cl_device_id m_device;
  std::string m_source, m_options;
  cl_command_queue m_queue = nullptr;
  cl_mem m_a = nullptr, m_b = nullptr, m_c = nullptr;
  std::vector<cl_kernel> m_kernels; ///< one per prepared candidate, released with the problem
};

} // namespace jitcache::examples
