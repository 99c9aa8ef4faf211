#pragma once

// The damage harness (tests/stress/damage_test.cpp runs a few trials of each kind in CI;
// bench/core/bench_damage.cpp runs as many as asked and prints the table): a cache populated
// through the CLI and the stress worker is damaged, then three builds run in child processes.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace jitcache::test {

enum class DamageKind {
  random_range,    ///< random bytes over a random range of random length (up to 16 pages)
  middle_random,   ///< the middle third of data.mdb, random bytes
  middle_ff,       ///< the middle third of data.mdb, 0xFF bytes
  zero_page,       ///< one page, zeroed (a random one after the meta pages)
  zero_meta0,      ///< meta page 0 zeroed
  zero_meta1,      ///< meta page 1 zeroed
  bit_flip,        ///< one bit anywhere in data.mdb
  truncate,        ///< data.mdb cut at a random length
  empty_file,      ///< data.mdb emptied
  garbage_lock,    ///< lock.mdb replaced by random bytes of random length
  garbage_use_log, ///< uses.log made of random bytes of random length, with record starts
};

/// Every kind, in the order above.
const std::vector<DamageKind>& all_damage_kinds();
std::string to_string(DamageKind kind);

/// The programs a trial runs.
struct DamageTools {
  std::string cli;     ///< the jitcache tool
  std::string worker;  ///< tests/stress/stress_worker: builds kernels through jitcache, runs them
  std::string kernels; ///< the kernels/ folder (its *.cl populate the cache)
};

/// Kernels each worker run builds (and runs, and checks).
constexpr int k_damage_worker_kernels = 2;

/// Populates a cache in `dir` (JITCACHE_DIR): the sample kernels through `jitcache build`, then
/// the worker's. Returns an empty string, or what failed.
std::string populate_cache(const DamageTools& tools, const std::filesystem::path& dir);

/// What one trial saw.
struct TrialResult {
  bool passed = false;
  std::string failure;      ///< the first promise broken (empty when passed)
  bool detected = false;    ///< `jitcache verify` failed before the builds
  bool quarantined = false; ///< a data.mdb.corrupt-* file appeared
  std::string outcomes;     ///< the three builds' outcomes, e.g. "miss,miss,hit"
};

/// Copies the populated cache `pristine` to `work` (replacing it), damages it as `kind` says
/// (seeded by `seed`), then: `jitcache verify`; three worker builds; `jitcache verify`. Passes
/// when no process crashed or ran past the time limit, every build returned kernels that
/// computed the right answer, the third build hit every kernel, the last verify passed, and
/// the damage was either reported by the first verify or harmless (every build hit and nothing
/// was moved aside).
TrialResult run_damage_trial(const DamageTools& tools, const std::filesystem::path& pristine,
                             const std::filesystem::path& work, DamageKind kind,
                             std::uint32_t seed);

} // namespace jitcache::test
