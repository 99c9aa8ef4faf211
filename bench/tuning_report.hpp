#pragma once

// What the tuning benchmarks share (bench/opencl/bench_tuning.cpp on PoCL,
// bench/cuda/bench_cuda_tuning.cpp on the GPU): their arguments, one problem size tuned and
// its choices timed side by side, and the table.

#include <jitcache/cache.hpp>
#include <jitcache/tuning.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace jitcache::bench {

/// --sizes 64,128,256 --runs 9 --kernels DIR, each optional; `defaults` for what is not given.
struct TuningArguments {
  std::vector<int> sizes;
  int runs = 9;
  std::string kernels = "kernels";
};
TuningArguments tuning_arguments(int argc, char** argv, TuningArguments defaults);

/// Tunes `problem` (size `size`) with `trials` through `cache` (a 10-minute limit), then times
/// the declared default, the heuristic's choice (the default where it has none) and the tuned
/// choice: one warm-up each, then `runs` rounds of one run of each, alternated; medians. The
/// row: size, the choices, their medians (ms) and ratios, the tuning's wall time, candidates,
/// skipped, and the compiles and kernel-cache hits of `backend` during the tuning. Exits the
/// process with a message on stderr when the tuning or a choice fails.
nlohmann::json tuning_row(Cache& cache, const std::string& backend, const tuning::Family& family,
                          const tuning::Device& device, int size, const tuning::Problem& problem,
                          const tuning::Trials& trials, int runs);

/// The rows as a Markdown table on stdout, after a blank line.
void print_tuning_table(const nlohmann::json& rows);

} // namespace jitcache::bench
