#pragma once

// The tuning database's example: kernels/matmul_tuned.cl, a tiled OpenCL matrix multiply whose
// tile size (TILE) and work per item (WPT) are -D options, tuned per problem size. Used by
// tests/opencl/tuning_test.cpp and bench/opencl/bench_tuning.cpp.

#include <jitcache/opencl.hpp>
#include <jitcache/tuning.hpp>

#include <string>
#include <vector>

namespace jitcache::examples {

/// The family: parameters TILE and WPT, declared default TILE=8, WPT=1, and a heuristic (a
/// larger tile, with more work per item, for larger problems).
tuning::Family matmul_family();

/// The kernel's source, read from `kernels_dir`/matmul_tuned.cl. Errors: io_error naming it.
Expected<std::string> matmul_source(const std::string& kernels_dir);

/// The problem {M, N, K} of an m x k by k x n product.
tuning::Problem matmul_problem(int m, int n, int k);

/// Every TILE in {4, 8, 16, 32} and WPT in {1, 2, 4, 8} with WPT dividing TILE.
std::vector<tuning::Parameters> matmul_candidates();

/// One problem on one OpenCL device: the inputs (deterministic pseudo-random values) and the
/// output in device buffers, and trials that build the kernel through `cache` with the
/// candidate's -D options added to `options` (ordinary cache entries). Not copyable; the
/// context and device must outlive it.
class MatmulProblem {
public:
  MatmulProblem(Cache& cache, cl_context context, cl_device_id device, int m, int n, int k,
                std::string source, std::string options = {});
  ~MatmulProblem();
  MatmulProblem(const MatmulProblem&) = delete;
  MatmulProblem& operator=(const MatmulProblem&) = delete;

  tuning::Problem problem() const { return matmul_problem(m_m, m_n, m_k); }
  /// Trials over `candidates`: prepare builds the program (a compile error skips the
  /// candidate; a TILE that does not divide M, N and K, or a WPT that does not divide TILE, is
  /// refused before building), run launches it and waits, output reads C; check compares C
  /// with the default's within a relative 1e-4.
  tuning::Trials trials(std::vector<tuning::Parameters> candidates);
  /// Builds and runs `parameters` once; C, or the error.
  Expected<std::vector<float>> compute(const tuning::Parameters& parameters);

private:
  Expected<tuning::Trial> prepare(const tuning::Parameters& parameters, const std::string& defines);

  Cache& m_cache;
  cl_context m_context;
  cl_device_id m_device;
  int m_m, m_n, m_k;
  std::string m_source, m_options;
  cl_command_queue m_queue = nullptr;
  cl_mem m_a = nullptr, m_b = nullptr, m_c = nullptr;
  std::vector<cl_kernel> m_kernels; ///< one per prepared candidate, released with the problem
};

} // namespace jitcache::examples
