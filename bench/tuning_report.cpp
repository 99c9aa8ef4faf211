#include "bench/tuning_report.hpp"

#include "bench/median.hpp"

#include "core/support/clock.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace jitcache::bench {

using detail::Stopwatch;

namespace {

[[noreturn]] void fail(const std::string& message) {
  std::cerr << message << "\n";
  std::exit(1);
}

// Median run time of each choice, the choices' runs alternated.
std::vector<double> compare(const tuning::Trials& trials, const tuning::Family& family,
                            const std::vector<tuning::Parameters>& choices, int runs) {
  std::vector<tuning::Trial> ready;
  for (const auto& p : choices) {
    auto trial = trials.prepare(p, tuning::defines(family, p));
    if (!trial)
      fail("cannot run " + tuning::defines(family, p) + ": " + trial.error().message);
    static_cast<void>(trial->run()); // warm-up
    ready.push_back(std::move(*trial));
  }
  std::vector<std::vector<double>> times(choices.size());
  for (int r = 0; r < runs; ++r)
    for (std::size_t i = 0; i < ready.size(); ++i) {
      const Stopwatch watch;
      if (auto ran = ready[i].run(); !ran)
        fail("run of " + tuning::defines(family, choices[i]) + ": " + ran.error().message);
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

TuningArguments tuning_arguments(int argc, char** argv, TuningArguments defaults) {
  TuningArguments out = std::move(defaults);
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--sizes") {
      out.sizes.clear();
      std::stringstream in(value);
      for (std::string part; std::getline(in, part, ',');)
        out.sizes.push_back(std::stoi(part));
    } else if (flag == "--runs") {
      out.runs = std::stoi(value);
    } else if (flag == "--kernels") {
      out.kernels = value;
    } else {
      fail("unknown argument " + flag + " (--sizes A,B,... --runs N --kernels DIR)");
    }
  }
  return out;
}

nlohmann::json tuning_row(Cache& cache, const std::string& backend, const tuning::Family& family,
                          const tuning::Device& device, int size, const tuning::Problem& problem,
                          const tuning::Trials& trials, int runs) {
  const Stats before = cache.session_stats();
  const Stopwatch tuning_clock;
  tuning::TuneOptions options;
  options.time_limit = std::chrono::minutes(10);
  auto tuned = tuning::tune(cache, family, problem, device, trials, options);
  const double tuning_ms = tuning_clock.ms();
  if (!tuned)
    fail(tuned.error().message);
  const Stats after = cache.session_stats();
  const auto compiles =
      after.get(backend, Counter::compiles) - before.get(backend, Counter::compiles);
  const auto hits = after.hits(backend) - before.hits(backend);
  const std::optional<tuning::Parameters> guess =
      family.heuristic ? family.heuristic(problem, device) : std::nullopt;
  const tuning::Parameters heuristic = guess ? *guess : family.defaults;
  const auto t = compare(trials, family, {family.defaults, heuristic, tuned->parameters}, runs);
  return {{"size", size},
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
}

void print_tuning_table(const nlohmann::json& rows) {
  std::printf("\n| size | tuned | default ms | heuristic ms | tuned ms | tuned/default | "
              "tuned/heuristic | tuning wall s | compiles | kernel-cache hits |\n"
              "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& r : rows)
    std::printf("| %d | %s | %.3f | %.3f | %.3f | %.2fx | %.2fx | %.1f | %d | %d |\n",
                r["size"].get<int>(), r["tuned"].get<std::string>().c_str(),
                r["default_ms"].get<double>(), r["heuristic_ms"].get<double>(),
                r["tuned_ms"].get<double>(), r["tuned_vs_default"].get<double>(),
                r["tuned_vs_heuristic"].get<double>(), r["tuning_ms"].get<double>() / 1000,
                r["compiles"].get<int>(), r["cache_hits"].get<int>());
}

} // namespace jitcache::bench
