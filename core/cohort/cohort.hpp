#pragma once

#include "core/engine/pipeline.hpp"
#include "core/engine/runtime.hpp"

#include <jitcache/cohort.hpp>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitcache::detail {

/// What one rank holds, as it tells the others: the node its user tier is on (ranks with the
/// same node share one user tier; "HOST\nUSER TIER", see host_of), the compiles its host runs at
/// once (its JITCACHE_MAX_COMPILES; 0: no cap) and, for each of its requests' keys, whether one
/// of its tiers has the entry.
struct Holding {
  std::string node;
  std::uint32_t compile_slots = 0;
  struct Want {
    Digest key;
    bool have = false;
  };
  std::vector<Want> wants;
};

/// The host of a node: what precedes its first newline (all of it when there is none).
inline std::string_view host_of(std::string_view node) {
  return node.substr(0, node.find('\n'));
}

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
/// ties broken by a rotation through the ranks, so that the compiles spread across the job;
/// but on each host, compiles go to no more ranks than the host's compile slots (the fewest
/// any of its ranks reports), while a rank that asked for the key is among them or a place is
/// left: more would not compile sooner (the slots queue them) and each compiling process pays
/// its compiler's start again (PoCL: about 0.45 s of CPU per process, measured).
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

/// serve_cohort() for offline requests (`Offline`: a `program` and a `target`) of a backend
/// whose `Runtime` (constructed from the config, the program and the target) hands back copies
/// of the entry as `Binary` (cuda::Binary, hip::CodeObject). One answer per request, in order; a
/// request without a target is invalid_argument and takes no part.
template <typename Binary, typename Runtime, typename Offline>
std::vector<Expected<Binary>>
compile_together(Cache& cache, cohort::Exchange& exchange, const std::vector<Offline>& requests,
                 const cohort::Options& options, cohort::Report* report) {
  std::deque<Runtime> runtimes; // not moved: the pipeline holds pointers to them
  std::vector<detail::Runtime*> set;
  for (const Offline& request : requests)
    if (!request.target.empty())
      set.push_back(&runtimes.emplace_back(cache.config(), request.program, request.target));
  auto answers = serve_cohort(cache, exchange, set, options, report);
  std::vector<Expected<Binary>> out;
  std::size_t next = 0;
  for (const Offline& request : requests) {
    if (request.target.empty()) {
      out.emplace_back(
          Error(ErrorCode::invalid_argument, "compile_together needs a target for each request"));
      continue;
    }
    auto& answer = answers[next++];
    if (!answer) {
      out.emplace_back(std::move(answer).error());
      continue;
    }
    Binary binary = std::move(*static_cast<Binary*>(answer->handle.get()));
    binary.info = std::move(answer->info);
    out.emplace_back(std::move(binary));
  }
  return out;
}

} // namespace jitcache::detail
