// Package lookup against the user tier at 10,000 entries: find + verify of a 100 KB entry
// (PackageStore::visit, a binary search in a mapped file and the entry's XXH3) beside the same
// lookup in the user tier (LmdbStore::visit, a read transaction), and the cost of opening a
// package (map, header checksum, index check) that each Cache pays once; and a miss in each (the
// cost the tier asked first adds to a hit in the other: the lookup order).
//
// usage: bench_package [--benchmark_* flags] (the package and the user tier are made in the temp
//        directory, TMPDIR, again on each run)
// Each lookup benchmark reports p50_us and p99_us over its lookups, timed one by one, and the
// same of the thread's CPU time (cpu_p50_us, cpu_p99_us).
#include "core/support/mapped_file.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/packages/package_format.hpp"
#include "core/tiers/packages/package_store.hpp"
#include "core/tiers/user/lmdb_store.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include <time.h>

namespace {

namespace fs = std::filesystem;
using namespace jitcache;
using jitcache::detail::encode_entry;
using jitcache::detail::LmdbStore;
using jitcache::detail::verify_entry;

constexpr int k_entries = 10000;
constexpr int k_probe_every = 100; // every 100th entry is a 100 KB one
constexpr std::size_t k_probe_bytes = 100 << 10;
constexpr std::size_t k_other_bytes = 1 << 10; // the rest are small: the index is what grows

Key key(int i) {
  return KeyBuilder("cuda").device("target_arch", "sm_90").source(std::to_string(i)).finish();
}

Entry entry(int i, const Key& k) {
  Entry e("cuda", std::string(i % k_probe_every == 0 ? k_probe_bytes : k_other_bytes, 'x'));
  e.key_fields = k.stored_fields;
  return e;
}

// The same entries as a package and (made on first use: one synced write each, a minute or
// more) as a user tier.
struct Fixture {
  fs::path dir;
  std::shared_ptr<detail::PackageStore> package;
  std::shared_ptr<LmdbStore> user_tier;
  std::vector<Digest> probes;

  Fixture() {
    dir = fs::temp_directory_path() / "jitcache-bench-package";
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<detail::PackageEntry> entries;
    for (int i = 0; i < k_entries; ++i) {
      const Key k = key(i);
      entries.push_back({k.digest, encode_entry(k.digest, entry(i, k))});
      if (i % k_probe_every == 0)
        probes.push_back(k.digest);
    }
    if (!detail::write_package(dir / "cuda-sm_90.jcpkg", detail::target_of("cuda", key(0).fields),
                               std::move(entries)))
      std::abort();
    package = detail::PackageStore::open_system({dir}, false);
    std::shuffle(probes.begin(), probes.end(), std::mt19937(7));
  }
  ~Fixture() { fs::remove_all(dir); }

  LmdbStore& user() {
    if (user_tier)
      return *user_tier;
    auto opened = LmdbStore::open(dir / "user", false);
    if (!opened)
      std::abort();
    user_tier = *opened;
    for (int i = 0; i < k_entries; ++i) {
      const Key k = key(i);
      if (!user_tier->put(k.digest, entry(i, k)))
        std::abort();
    }
    return *user_tier;
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

double thread_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

double percentile(std::vector<double>& v, std::size_t per_mille) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, v.size() * per_mille / 1000)];
}

// Times `lookup` of each probed (100 KB) entry: the median and the 99th percentile of the wall
// time, and of this thread's CPU time (what a lookup costs without waiting for a core).
// `lookup` returns the payload's size (0: not found).
void time_lookups(benchmark::State& state,
                  const std::function<std::size_t(const Digest&)>& lookup) {
  const auto& probes = fixture().probes;
  std::vector<double> us, cpu_us;
  std::size_t i = 0;
  for (auto _ : state) {
    // The wall clock (vDSO, no system call) inside the CPU clock (a system call each): the
    // wall time is the lookup's alone.
    const double cpu = thread_cpu_us();
    const auto t = std::chrono::steady_clock::now();
    const std::size_t seen = lookup(probes[i++ % probes.size()]);
    const auto end = std::chrono::steady_clock::now();
    cpu_us.push_back(thread_cpu_us() - cpu);
    us.push_back(std::chrono::duration<double, std::micro>(end - t).count());
    if (seen < k_probe_bytes)
      state.SkipWithError("a probed entry was not found");
    benchmark::DoNotOptimize(seen);
  }
  state.counters["p50_us"] = percentile(us, 500);
  state.counters["p99_us"] = percentile(us, 990);
  state.counters["cpu_p50_us"] = percentile(cpu_us, 500);
  state.counters["cpu_p99_us"] = percentile(cpu_us, 990);
}

std::size_t visit(Store& store, const Digest& key) {
  std::size_t seen = 0;
  auto found = store.visit(key, [&](const EntryView& view) { seen = view.payload.size(); });
  return found && *found ? seen : 0;
}

void BM_PackageLookup(benchmark::State& state) {
  time_lookups(state, [](const Digest& key) { return visit(*fixture().package, key); });
}
void BM_UserTierLookup(benchmark::State& state) {
  time_lookups(state, [](const Digest& key) { return visit(fixture().user(), key); });
}
// The floor under both: verifying the same entries' bytes (their XXH3 and header) where they lie
// in a mapping of the package file, found beforehand: no lookup at all. On a VM, hashing file
// pages (4 KiB each, behind nested page tables) costs more than hashing heap memory.
void BM_VerifyInMappedFile(benchmark::State& state) {
  auto file = detail::MappedFile::open(fixture().dir / "cuda-sm_90.jcpkg");
  auto reader = file ? detail::PackageReader::open((*file)->bytes())
                     : Expected<detail::PackageReader>(file.error());
  if (!reader)
    std::abort();
  std::map<Digest, std::string_view> bytes;
  for (const Digest& key : fixture().probes)
    bytes[key] = *reader->find(key);
  time_lookups(state, [&](const Digest& key) {
    return verify_entry(key, bytes.at(key)) ? bytes.at(key).size() : 0;
  });
}
// A miss: what the tier looked up first costs a request the other tier serves.
void time_misses(benchmark::State& state, Store& store) {
  std::vector<Digest> absent;
  for (int i = 0; i < 1000; ++i)
    absent.push_back(key(k_entries + i).digest);
  std::size_t i = 0;
  for (auto _ : state) {
    auto found = store.visit(absent[i++ % absent.size()], [](const EntryView&) {});
    if (!found || *found)
      state.SkipWithError("a key never stored was found");
  }
}
void BM_PackageMiss(benchmark::State& state) {
  time_misses(state, *fixture().package);
}
void BM_UserTierMiss(benchmark::State& state) {
  time_misses(state, fixture().user());
}
void BM_PackageOpen(benchmark::State& state) {
  const fs::path dir = fixture().dir;
  for (auto _ : state) {
    auto store = detail::PackageStore::open_system({dir}, false);
    benchmark::DoNotOptimize(store->packages().size());
  }
}

BENCHMARK(BM_PackageLookup)->Iterations(20000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_UserTierLookup)->Iterations(20000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_VerifyInMappedFile)->Iterations(20000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PackageMiss)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_UserTierMiss)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PackageOpen)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
