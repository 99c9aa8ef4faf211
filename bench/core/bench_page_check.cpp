// The cost of the LMDB page verifier (core/tiers/user/lmdb_page_check) as the user tier grows.
//
// usage: bench_page_check DIR [ENTRIES...]   (default 1000 10000 100000)
//   For each count, a data file laid out as jitcache's (named databases "entries", "access",
//   "records", "counters", "meta"; every entry a 32-byte digest key and a value of 3 KB to
//   8 KB on overflow pages, and its use time) is written in DIR/<count> with big
//   transactions, then checked 5 times in each mode (the page cache warm, as it is for the process
//   that just wrote or read the file). Prints a Markdown table of the median time, per 1,000
//   entries too. Value sizes do not change the cost: an overflow run costs one 16-byte read.
#include "core/tiers/user/lmdb_page_check.hpp"

#include <lmdb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

bool fill(const fs::path& dir, int entries) {
  fs::create_directories(dir);
  if (fs::exists(dir / "data.mdb"))
    return true;
  MDB_env* env = nullptr;
  mdb_env_create(&env);
  mdb_env_set_maxdbs(env, 8);
  mdb_env_set_mapsize(env, std::size_t(64) << 30);
  if (mdb_env_open(env, dir.c_str(), MDB_NOSYNC, 0600) != MDB_SUCCESS)
    return false;
  std::mt19937 rng(1);
  std::string value(8 * 1024, 'v');
  constexpr int k_batch = 5000;
  for (int done = 0; done < entries;) {
    MDB_txn* txn = nullptr;
    mdb_txn_begin(env, nullptr, 0, &txn);
    MDB_dbi dbis[5];
    const char* names[5] = {"entries", "counters", "access", "meta", "records"};
    for (int i = 0; i < 5; ++i)
      mdb_dbi_open(txn, names[i], MDB_CREATE, &dbis[i]);
    for (int n = 0; n < k_batch && done < entries; ++n, ++done) {
      unsigned char digest[32];
      for (unsigned char& b : digest)
        b = static_cast<unsigned char>(rng());
      MDB_val k{sizeof digest, digest};
      MDB_val v{3 * 1024 + rng() % (5 * 1024), value.data()};
      std::uint64_t when = done;
      MDB_val t{sizeof when, &when};
      if (mdb_put(txn, dbis[0], &k, &v, 0) != MDB_SUCCESS ||
          mdb_put(txn, dbis[2], &k, &t, 0) != MDB_SUCCESS)
        return false;
      if (done % 10 == 0) {
        MDB_val r{200, value.data()};
        mdb_put(txn, dbis[4], &k, &r, 0);
      }
    }
    if (mdb_txn_commit(txn) != MDB_SUCCESS)
      return false;
  }
  mdb_env_close(env);
  return true;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_page_check DIR [ENTRIES...]\n");
    return 2;
  }
  std::vector<int> counts;
  for (int i = 2; i < argc; ++i)
    counts.push_back(std::atoi(argv[i]));
  if (counts.empty())
    counts = {1000, 10000, 100000};
  std::printf("| entries | data file | full: reads | full: median of 5 | per 1,000 entries "
              "| tree pages only: reads | median of 5 | per 1,000 entries |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int count : counts) {
    const fs::path dir = fs::path(argv[1]) / std::to_string(count);
    if (!fill(dir, count)) {
      std::fprintf(stderr, "cannot fill %s\n", dir.c_str());
      return 1;
    }
    // Full (jitcache verify, after an unclean end, before the first write up to 64 MB) and
    // tree pages only (before the first write, above).
    double median[2];
    std::uint64_t pages[2];
    for (int mode = 0; mode < 2; ++mode) {
      std::vector<double> ms;
      jitcache::detail::PageCheck check;
      for (int rep = 0; rep < 5; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        check = jitcache::detail::check_lmdb_pages(dir / "data.mdb", {std::nullopt, mode == 0});
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
        if (!check.ok()) {
          std::fprintf(stderr, "%s: %s\n", dir.c_str(), check.problem.c_str());
          return 1;
        }
      }
      std::sort(ms.begin(), ms.end());
      median[mode] = ms[2];
      pages[mode] = check.pages_read;
    }
    std::printf("| %d | %.0f MB | %llu | %.2f ms | %.3f ms | %llu | %.2f ms | %.3f ms |\n", count,
                double(fs::file_size(dir / "data.mdb")) / 1e6,
                static_cast<unsigned long long>(pages[0]), median[0], median[0] * 1000.0 / count,
                static_cast<unsigned long long>(pages[1]), median[1], median[1] * 1000.0 / count);
    std::fflush(stdout);
  }
  return 0;
}
