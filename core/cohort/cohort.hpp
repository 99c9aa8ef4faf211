#pragma once

#include "core/engine/pipeline.hpp"
#include "core/engine/runtime.hpp"

#include <jitcache/cohort.hpp>

#include <string>
#include <vector>

namespace jitcache::detail {

/// What one rank holds, as it tells the others: the node its user tier is on (ranks with the
/// same node share one user tier) and, for each of its requests' keys, whether one of its
/// tiers has the entry.
struct Holding {
  std::string node;
  struct Want {
    Digest key;
    bool have = false;
  };
  std::vector<Want> wants;
};

/// Who provides one key of the job, and to whom.
struct Task {
  Digest key;
  int provider = 0;          ///< the rank that compiles it, or hands it out from a tier
  bool compile = false;      ///< false: a tier of the provider has it
  std::vector<int> receives; ///< the other ranks that asked for it and hold it not, in rank order
  /// The ranks that write it into their node's user tier: one per node that asked for it, other
  /// than the nodes of the provider and of the holders (where the compile stored it, or a tier
  /// holds it).
  std::vector<int> stores;
};

/// The job's plan, computed alike on every rank from every rank's Holding (in rank order):
/// one Task per distinct key, in key order. A key some rank holds is provided by a holder;
/// a key no rank holds is compiled by one of the ranks that asked for it. Each is given to the
/// candidate with the fewest tasks so far (compiles weigh, hand-outs cost next to nothing),
/// ties broken by a rotation through the ranks, so that the compiles spread across the job.
std::vector<Task> plan_cohort(const std::vector<Holding>& ranks);

/// Serves `runtimes` (this rank's requests; each runtime outlives the call) together with the
/// other ranks of `exchange`, each calling with its own set: the keys are agreed on, every key
/// is compiled (or handed out from a tier) by one rank, and its entry sent to the ranks that
/// asked for it, which keep it in memory (one per node also in its user tier); then each request
/// takes the pipeline (serve_request), which finds its entry there. A request whose entry did
/// not come by the deadline (the ranks never agreed, or its provider stalled) is served alone:
/// the pipeline compiles it (with the user tier's lease: once per node). A compile error of the
/// provider is every asking rank's answer (the compiler's log, not compiled again).
/// One answer per runtime, in order. `report` (may be null) says what this rank did.
std::vector<Expected<Answer>> serve_cohort(Cache& cache, cohort::Exchange& exchange,
                                           const std::vector<Runtime*>& runtimes,
                                           const cohort::Options& options, cohort::Report* report);

} // namespace jitcache::detail
