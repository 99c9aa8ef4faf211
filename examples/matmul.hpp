#pragma once

// The tuning database's example, what its backends share: a tiled matrix multiply C = A * B
// (kernels/matmul_tuned.cl for OpenCL, kernels/matmul_tuned.cu for CUDA) whose tile (TILE) and
// work per item (WPT) are -D options, tuned per problem size. The OpenCL side is
// examples/tuned_matmul.hpp, the CUDA side examples/cuda_matmul.hpp.

#include <jitcache/expected.hpp>
#include <jitcache/tuning.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::examples {

/// The text of `kernels_dir`/`file`. Errors: io_error naming it.
Expected<std::string> matmul_source(const std::string& kernels_dir,
                                    const std::string& file = "matmul_tuned.cl");

/// The problem {M, N, K} of an m x k by k x n product.
tuning::Problem matmul_problem(int m, int n, int k);

/// M, N and K of `problem` when each is a positive number; nullopt otherwise (never throws).
struct MatmulSize {
  int m = 0, n = 0, k = 0;
};
std::optional<MatmulSize> matmul_size(const tuning::Problem& problem);

/// Every TILE of `tiles` and WPT in {1, 2, 4, 8} with WPT dividing TILE and at most
/// `max_items` work-items ((TILE / WPT) * TILE) in a work-group.
std::vector<tuning::Parameters> matmul_candidates(const std::vector<int>& tiles = {4, 8, 16, 32},
                                                  int max_items = 1024);

/// The inputs of an m x k by k x n product: deterministic pseudo-random values in [-0.5, 0.5),
/// the same on every call and every machine.
struct MatmulInputs {
  std::vector<float> a; ///< m x k, row-major
  std::vector<float> b; ///< k x n, row-major
};
MatmulInputs matmul_inputs(int m, int n, int k);

/// Trials::check of the example: `output` and `reference` are float arrays of one size that
/// agree within a relative 1e-4 (the candidates sum in different orders).
bool matmul_close(std::string_view reference, std::string_view output);

/// What one problem on one backend shares with the others: its size, its tuning problem, and
/// trials over candidates made ready by the backend's prepare(). Not copyable.
class MatmulTrials {
public:
  virtual ~MatmulTrials() = default;
  MatmulTrials(const MatmulTrials&) = delete;
  MatmulTrials& operator=(const MatmulTrials&) = delete;

  tuning::Problem problem() const { return matmul_problem(m_m, m_n, m_k); }
  /// Trials over `candidates`: prepare is the backend's, check is matmul_close(). They refer to
  /// this object, which must outlive them; each candidate prepared stays loaded until then.
  tuning::Trials trials(std::vector<tuning::Parameters> candidates);
  /// Prepares and runs `parameters` once; C, or the error of either.
  Expected<std::vector<float>> compute(const tuning::Parameters& parameters);

protected:
  MatmulTrials(tuning::Family family, int m, int n, int k)
      : m_family(std::move(family)), m_m(m), m_n(n), m_k(k) {}
  /// Builds the kernel with `defines` (tuning::defines of `parameters`) and binds its
  /// arguments; an error skips the candidate.
  virtual Expected<tuning::Trial> prepare(const tuning::Parameters& parameters,
                                          const std::string& defines) = 0;

  tuning::Family m_family;
  int m_m, m_n, m_k;
};

} // namespace jitcache::examples
