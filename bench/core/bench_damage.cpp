// The damage harness at length: N trials of every kind of damage (tests/stress/damage_harness),
// run J at a time, and a table of outcomes per kind.
// usage: bench_damage CLI WORKER KERNELS_DIR [--trials N] [--jobs J] [--seed S] [--kind NAME]
//   Trial t of kind k uses seed S + 1000 * k + t; a failure prints its kind and seed, and
//   `--trials 1 --seed <seed> --kind <k>` replays it (k as the table names it).
#include "tests/stress/damage_harness.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace jitcache::test;
namespace fs = std::filesystem;

namespace {

struct Tally {
  int trials = 0, passed = 0, detected = 0, quarantined = 0, all_hit = 0;
};

} // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bench_damage CLI WORKER KERNELS_DIR [--trials N] [--jobs J] "
                         "[--seed S] [--kind NAME]\n");
    return 2;
  }
  const DamageTools tools{argv[1], argv[2], argv[3]};
  int trials = 200, jobs = 2;
  std::uint32_t base_seed = 0;
  std::string only;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--trials")
      trials = std::atoi(argv[i + 1]);
    else if (flag == "--jobs")
      jobs = std::atoi(argv[i + 1]);
    else if (flag == "--seed")
      base_seed = static_cast<std::uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    else if (flag == "--kind")
      only = argv[i + 1];
  }
  char pattern[] = "/tmp/bench_damage.XXXXXX";
  const fs::path root = ::mkdtemp(pattern);
  const fs::path pristine = root / "pristine";
  if (const std::string error = populate_cache(tools, pristine); !error.empty()) {
    std::fprintf(stderr, "populating the cache failed: %s\n", error.c_str());
    return 1;
  }
  struct Job {
    DamageKind kind;
    std::uint32_t seed;
  };
  std::vector<Job> work;
  const auto& kinds = all_damage_kinds();
  // Kinds take turns, so that a run stopped early has tried every kind.
  for (int t = 0; t < trials; ++t)
    for (std::size_t k = 0; k < kinds.size(); ++k)
      if (only.empty() || to_string(kinds[k]) == only)
        work.push_back({kinds[k], base_seed + 1000 * std::uint32_t(k + 1) + std::uint32_t(t)});
  std::vector<Tally> tally(kinds.size());
  std::mutex mutex;
  std::atomic<std::size_t> next{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j)
    threads.emplace_back([&, j] {
      const fs::path dir = root / ("work" + std::to_string(j));
      for (std::size_t i; (i = next++) < work.size();) {
        const TrialResult r = run_damage_trial(tools, pristine, dir, work[i].kind, work[i].seed);
        std::lock_guard<std::mutex> lock(mutex);
        Tally& t = tally[std::size_t(work[i].kind)];
        ++t.trials;
        t.passed += r.passed;
        t.detected += r.detected;
        t.quarantined += r.quarantined;
        t.all_hit += r.outcomes.find("miss") == std::string::npos;
        // One line per trial as it ends: a long run stopped early still says what it saw.
        std::fprintf(stderr, "%s %s seed %u: %s%s%s %s\n", r.passed ? "passed" : "FAILED",
                     to_string(work[i].kind).c_str(), work[i].seed,
                     r.detected ? "verify found it, " : "", r.quarantined ? "moved aside, " : "",
                     r.outcomes.c_str(), r.failure.c_str());
      }
    });
  for (std::thread& t : threads)
    t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("| damage | trials | passed | verify found it | moved aside | every build hit |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  int failed = 0;
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    const Tally& t = tally[k];
    if (!t.trials)
      continue;
    std::printf("| %s | %d | %d | %d | %d | %d |\n", to_string(kinds[k]).c_str(), t.trials,
                t.passed, t.detected, t.quarantined, t.all_hit);
    failed += t.trials - t.passed;
  }
  std::printf("%zu trials in %.0f s, %d failed\n", work.size(), seconds, failed);
  std::error_code ec;
  fs::remove_all(root, ec);
  return failed == 0 ? 0 : 1;
}
