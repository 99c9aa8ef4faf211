// A tuning-database lookup that finds a record in a warm process (target: at most 5 us), with
// Google Benchmark: the user tier holds `records` records (--records, default 1000) and the
// lookups cycle over them.
//
//   build/bench/core/bench_tuning_lookup [--benchmark_repetitions=7 ...]
#include <jitcache/tuning.hpp>

#include "core/tiers/user/lmdb_store.hpp"
#include "core/tuning/tuning_record.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>

namespace {

using namespace jitcache;
using jitcache::detail::LmdbStore;

tuning::Family family() {
  tuning::Family f;
  f.name = "matmul_tuned";
  f.parameters = {"TILE", "WPT"};
  f.defaults = {{"TILE", "8"}, {"WPT", "1"}};
  return f;
}

const tuning::Device k_device = {"opencl",
                                 "cpu",
                                 {{"platform_name", "Portable Computing Language"},
                                  {"platform_version", "OpenCL 3.0 PoCL 3.1"},
                                  {"device_name", "cpu"},
                                  {"driver_version", "3.1"},
                                  {"jitcache_version", "0.1.0"}}};

tuning::Problem problem(int i) {
  return {{"M", std::to_string(64 * (i + 1))}, {"N", "256"}, {"K", "256"}};
}

int g_records = 1000;

struct Fixture {
  std::filesystem::path dir;
  std::unique_ptr<Cache> cache;
  Fixture() {
    char pattern[] = "/tmp/bench_tuning_XXXXXX";
    dir = mkdtemp(pattern);
    const Config config = Config::from_variables({{"JITCACHE_DIR", dir.string()}});
    {
      auto store = LmdbStore::open(config.cache_dir, false);
      for (int i = 0; i < g_records; ++i) {
        tuning::Record r;
        r.family = "matmul_tuned";
        r.family_version = 1;
        r.problem = problem(i);
        r.device = k_device;
        r.parameters = {{"TILE", "16"}, {"WPT", "4"}};
        r.best_ms = 1;
        r.default_ms = 2;
        static_cast<void>((*store)->put_tuning(tuning::key_of(r), tuning::encode_record(r)));
      }
    }
    cache = std::make_unique<Cache>(config);
  }
  ~Fixture() {
    cache.reset();
    std::filesystem::remove_all(dir);
  }
};

void BM_LookupFindsARecord(benchmark::State& state) {
  static Fixture fixture;
  const tuning::Family f = family();
  std::vector<tuning::Problem> problems;
  for (int i = 0; i < g_records; ++i)
    problems.push_back(problem(i));
  std::size_t i = 0;
  for (auto _ : state) {
    tuning::Choice c = tuning::lookup(*fixture.cache, f, problems[i], k_device);
    if (c.origin != tuning::Origin::user)
      state.SkipWithError("no record found");
    benchmark::DoNotOptimize(c);
    i = (i + 1) % problems.size();
  }
}
BENCHMARK(BM_LookupFindsARecord);

void BM_LookupMissesToTheDefault(benchmark::State& state) {
  static Fixture fixture;
  const tuning::Family f = family();
  const tuning::Problem absent = {{"M", "1"}, {"N", "1"}, {"K", "1"}};
  for (auto _ : state)
    benchmark::DoNotOptimize(tuning::lookup(*fixture.cache, f, absent, k_device));
}
BENCHMARK(BM_LookupMissesToTheDefault);

} // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind("--records=", 0) == 0)
      g_records = std::atoi(argv[i] + 10);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
