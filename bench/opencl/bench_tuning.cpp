// The tuning database on PoCL (kernels/matmul_tuned.cl through examples/tuned_matmul): per
// problem size, the tuned choice against the declared default and the heuristic (medians of
// alternated runs), what tuning cost (wall time, compiles), and what the kernel cache saves
// when the same candidates are tuned again for the next problem (their programs are hits).
//
//   POCL_KERNEL_CACHE=0 build/bench/opencl/bench_tuning [--sizes 64,128,256] [--runs 9]
//                                                       [--kernels DIR]
// (PoCL's own cache off, so that the first problem's compiles are cold.)
// Prints one JSON object per size, then a table.
#include "examples/tuned_matmul.hpp"

#include "core/clock.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace {

using namespace jitcache;

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Median run time of each choice, the choices' runs alternated.
std::vector<double> compare(examples::MatmulProblem& problem,
                            const std::vector<tuning::Parameters>& choices, int runs) {
  const tuning::Family family = examples::matmul_family();
  std::vector<tuning::Trial> trials;
  auto prepare = problem.trials({}).prepare;
  for (const auto& p : choices) {
    auto trial = prepare(p, tuning::defines(family, p));
    if (!trial) {
      std::cerr << "cannot run " << tuning::defines(family, p) << ": " << trial.error().message
                << "\n";
      std::exit(1);
    }
    static_cast<void>(trial->run()); // warm-up
    trials.push_back(std::move(*trial));
  }
  std::vector<std::vector<double>> times(choices.size());
  for (int r = 0; r < runs; ++r)
    for (std::size_t i = 0; i < trials.size(); ++i) {
      const Stopwatch watch;
      static_cast<void>(trials[i].run());
      times[i].push_back(watch.ms());
    }
  std::vector<double> out;
  for (auto& t : times)
    out.push_back(median(t));
  return out;
}

std::string text(const tuning::Parameters& p) {
  std::string out;
  for (const auto& [name, value] : p)
    out += (out.empty() ? "" : ",") + name + "=" + value;
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {64, 128, 256};
  int runs = 9;
  std::string kernels = "kernels";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--sizes") {
      sizes.clear();
      std::stringstream in(value);
      for (std::string part; std::getline(in, part, ',');)
        sizes.push_back(std::stoi(part));
    } else if (flag == "--runs") {
      runs = std::stoi(value);
    } else if (flag == "--kernels") {
      kernels = value;
    }
  }
  const auto read = examples::matmul_source(kernels);
  if (!read) {
    std::cerr << read.error().message << " (--kernels DIR)\n";
    return 1;
  }
  const std::string& source = *read;

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
  const tuning::Family family = examples::matmul_family();
  nlohmann::json rows = nlohmann::json::array();
  for (int n : sizes) {
    examples::MatmulProblem problem(cache, context, device, n, n, n, source);
    const Stats before = cache.session_stats();
    const Stopwatch tuning_clock;
    tuning::TuneOptions options;
    options.time_limit = std::chrono::minutes(10);
    auto tuned = tuning::tune(cache, family, problem.problem(), *dev,
                              problem.trials(examples::matmul_candidates()), options);
    const double tuning_ms = tuning_clock.ms();
    if (!tuned) {
      std::cerr << tuned.error().message << "\n";
      return 1;
    }
    const Stats after = cache.session_stats();
    const auto compiles =
        after.get("opencl", Counter::compiles) - before.get("opencl", Counter::compiles);
    const auto hits = after.hits("opencl") - before.hits("opencl");
    const std::optional<tuning::Parameters> guess = family.heuristic(problem.problem(), *dev);
    const tuning::Parameters heuristic = guess ? *guess : family.defaults;
    const auto t = compare(problem, {family.defaults, heuristic, tuned->parameters}, runs);
    nlohmann::json row = {{"size", n},
                          {"tuned", text(tuned->parameters)},
                          {"heuristic", text(heuristic)},
                          {"default_ms", t[0]},
                          {"heuristic_ms", t[1]},
                          {"tuned_ms", t[2]},
                          {"tuned_vs_default", t[0] / t[2]},
                          {"tuned_vs_heuristic", t[1] / t[2]},
                          {"tuning_ms", tuning_ms},
                          {"candidates", tuned->record->candidates},
                          {"skipped", tuned->record->skipped},
                          {"compiles", compiles},
                          {"cache_hits", hits}};
    std::cout << row.dump() << std::endl;
    rows.push_back(row);
  }
  std::printf("\n| size | tuned | default ms | heuristic ms | tuned ms | tuned/default | "
              "tuned/heuristic | tuning wall s | compiles | kernel-cache hits |\n"
              "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& r : rows)
    std::printf("| %d | %s | %.2f | %.2f | %.2f | %.2fx | %.2fx | %.1f | %d | %d |\n",
                r["size"].get<int>(), r["tuned"].get<std::string>().c_str(),
                r["default_ms"].get<double>(), r["heuristic_ms"].get<double>(),
                r["tuned_ms"].get<double>(), r["tuned_vs_default"].get<double>(),
                r["tuned_vs_heuristic"].get<double>(), r["tuning_ms"].get<double>() / 1000,
                r["compiles"].get<int>(), r["cache_hits"].get<int>());
  clReleaseContext(context);
  cache.flush();
  std::filesystem::remove_all(dir);
  return 0;
}
