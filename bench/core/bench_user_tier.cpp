// The user tier at scale: lookup + read + verify (LmdbStore::get) of a 100 KB entry as the tier
// grows to 100,000 entries of 4 to 200 KB, and hit throughput with threads and processes.
//
// usage: bench_user_tier DIR [ENTRIES [SCALE]]
//   DIR      a directory on a local disk; tiers of 1,000, 10,000, ... up to ENTRIES entries
//            are built in DIR/<count> (filling is slow: one synced write per entry) and kept,
//            so that a second run only measures
//   ENTRIES  the largest tier (default 100000)
//   SCALE    blob sizes are 4..200 KB times SCALE (default 1; below 1 to fit a small disk;
//            the probed entries stay 100 KB)
// Prints Markdown tables of medians over the lookups made. Every 100th entry is exactly 100 KB:
// those are the ones looked up, in a random order.
#include "core/tiers/user/lmdb_store.hpp"

#include <jitcache/config.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using jitcache::Digest;
using jitcache::Entry;
using jitcache::detail::LmdbStore;

constexpr int k_probe_every = 100;
constexpr std::size_t k_probe_bytes = 100 << 10;
constexpr int k_lookups = 20000;
constexpr double k_throughput_seconds = 2.0;

Digest key(int i) {
  return Digest::of("bench entry " + std::to_string(i));
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_user_tier: %s\n", what.c_str());
  std::exit(1);
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// Times `lookups` gets of random probed entries among the first `entries`, in microseconds.
std::vector<double> time_gets(LmdbStore& store, int entries, int lookups, std::mt19937& random) {
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(lookups));
  std::uniform_int_distribution<int> pick(0, entries / k_probe_every - 1);
  for (int n = 0; n < lookups; ++n) {
    const Digest k = key(pick(random) * k_probe_every);
    const auto t = clock_type::now();
    auto got = store.get(k);
    us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t).count());
    if (!got || !*got || (*got)->payload.size() != k_probe_bytes)
      die("probe entry missing or wrong");
  }
  return us;
}

// Lookups per second of one loop over random probes for k_throughput_seconds.
double hit_rate(LmdbStore& store, int entries, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> pick(0, entries / k_probe_every - 1);
  const auto end = clock_type::now() + std::chrono::duration<double>(k_throughput_seconds);
  std::uint64_t n = 0;
  while (clock_type::now() < end) {
    if (!store.get(key(pick(random) * k_probe_every)).value())
      die("probe entry missing");
    ++n;
  }
  return static_cast<double>(n) / k_throughput_seconds;
}

} // namespace

// Fills the tier in `dir` up to `entries` entries; returns the seconds it took.
double fill(LmdbStore& store, int entries, double scale) {
  std::mt19937 random(1);
  std::string noise(200 << 10, '\0'); // incompressible content, sliced for each blob
  for (char& c : noise)
    c = static_cast<char>(random());
  const auto start = clock_type::now();
  for (int i = static_cast<int>(store.usage().value().entries); i < entries; ++i) {
    const std::size_t size =
        i % k_probe_every == 0
            ? k_probe_bytes
            : static_cast<std::size_t>(
                  scale * std::uniform_int_distribution<int>(4 << 10, 200 << 10)(random));
    const std::size_t at = static_cast<std::size_t>(i) * 7919 % (noise.size() - size + 1);
    if (auto ok = store.put(key(i), Entry{"opencl", noise.substr(at, size), {}, 0}); !ok)
      die(ok.error().message);
  }
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

int main(int argc, char** argv) {
  if (argc < 2)
    die("usage: bench_user_tier DIR [ENTRIES [SCALE]]");
  const std::string dir = argv[1];
  const int total = argc > 2 ? std::atoi(argv[2]) : 100000;
  const double scale = argc > 3 ? std::atof(argv[3]) : 1.0;

  std::printf("| entries | stored | file | fill | first read p50 | p50 | p99 | p99.9 |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::shared_ptr<LmdbStore> largest;
  int entries = 0;
  for (int checkpoint = 1000; checkpoint <= total; checkpoint *= 10) {
    largest.reset();
    auto store = LmdbStore::open(dir + "/" + std::to_string(checkpoint), false);
    if (!store)
      die(store.error().message);
    const double fill_s = fill(**store, checkpoint, scale);
    // First reads in this process (page-table faults on the mapped file), then warm reads.
    std::mt19937 pick(7);
    const auto first =
        time_gets(**store, checkpoint, std::min(2000, checkpoint / k_probe_every), pick);
    time_gets(**store, checkpoint, k_lookups, pick);
    const auto warm = time_gets(**store, checkpoint, k_lookups, pick);
    const auto usage = (*store)->usage().value();
    std::printf("| %d | %s | %s | %.0f s | %.1f us | %.1f us | %.1f us | %.1f us |\n", checkpoint,
                jitcache::format_size(usage.value_bytes).c_str(),
                jitcache::format_size(usage.file_bytes).c_str(), fill_s, percentile(first, 0.5),
                percentile(warm, 0.5), percentile(warm, 0.99), percentile(warm, 0.999));
    std::fflush(stdout);
    largest = *store;
    entries = checkpoint;
  }

  std::printf("\n| hit throughput, %d entries, 100 KB entries | lookups/s |\n", entries);
  std::printf("|---|---:|\n");
  std::printf("| 1 thread | %.0f |\n", hit_rate(*largest, entries, 1));
  {
    std::atomic<double> sum{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 2; ++t)
      threads.emplace_back([&, t] {
        const double r = hit_rate(*largest, entries, 10 + t);
        for (double old = sum; !sum.compare_exchange_weak(old, old + r);)
          ;
      });
    for (auto& t : threads)
      t.join();
    std::printf("| 2 threads, one process | %.0f |\n", sum.load());
  }
  {
    int pipes[2];
    if (::pipe(pipes) != 0)
      die("pipe");
    for (unsigned p = 0; p < 2; ++p) {
      if (::fork() == 0) { // the child opens its own environment (LmdbStore handles fork)
        const double r = hit_rate(*largest, entries, 20 + p);
        if (::write(pipes[1], &r, sizeof r) != sizeof r)
          ::_exit(1);
        ::_exit(0);
      }
    }
    double sum = 0;
    for (int p = 0; p < 2; ++p) {
      double r = 0;
      if (::read(pipes[0], &r, sizeof r) != sizeof r)
        die("child failed");
      sum += r;
      ::wait(nullptr);
    }
    std::printf("| 2 processes | %.0f |\n", sum);
  }
  return 0;
}
