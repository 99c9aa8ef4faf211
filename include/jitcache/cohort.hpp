#pragma once

#include <jitcache/cache.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/export.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

struct jitcache_cache;

/// A cohort: a group of processes (the ranks of an MPI job) that build a set of requests
/// together, so that each kernel missing from every rank's tiers is compiled once for the whole
/// group and its entry handed to the ranks that asked for it. The core knows the group only
/// through Exchange; jitcache/mpi.hpp makes one of an MPI communicator. Each backend has its
/// entry point taking a set of requests and an Exchange (opencl::build_programs,
/// cuda::compile_together, hip::compile_together).
namespace jitcache::cohort {

using Clock = std::chrono::steady_clock;

/// How the processes of a cohort talk: what the core asks of a communicator, nothing else.
/// Every process of the group calls the same entry point with its own Exchange, each with the
/// same rank numbering; what one process sends is received by the named one, in order. An
/// implementation must never wait past a deadline it is given (a rank that stalls or never
/// joins must not hang the others): a call that cannot finish in time says so, and the cohort
/// carries on without it (the ranks then compile what they lack themselves).
class JITCACHE_EXPORT Exchange {
public:
  virtual ~Exchange();
  /// This process's rank, 0 <= rank() < size().
  virtual int rank() const = 0;
  /// How many processes the group has (at least 1).
  virtual int size() const = 0;
  /// Starts the exchanges of one call of a cohort entry point: what is sent from now on is
  /// never mistaken for what an earlier call left unreceived (MPI: a duplicate communicator).
  /// Errors: the exchange could not start by `deadline` (a rank that never joined): the call
  /// then goes on alone.
  virtual Expected<void> begin(Clock::time_point deadline) = 0;
  /// Every process's `mine`, in rank order (this process's own among them). Errors: not all of
  /// them came by `deadline`.
  virtual Expected<std::vector<std::string>> allgather(const std::string& mine,
                                                       Clock::time_point deadline) = 0;
  /// Starts handing `bytes` to process `to` (never this one) and returns without waiting for it
  /// to be received; end() finishes it. Errors: the transport's.
  virtual Expected<void> send(int to, std::string bytes) = 0;
  /// The next bytes process `from` sent with send(); nullopt when none came by `deadline`.
  /// Errors: the transport's.
  virtual Expected<std::optional<std::string>> receive(int from, Clock::time_point deadline) = 0;
  /// Ends the call begun with begin(): waits, until `deadline`, for the sends to be received,
  /// then lets go of what a rank that never received keeps pending. Never fails.
  virtual void end(Clock::time_point deadline) = 0;
};

/// How a cohort entry point behaves.
struct Options {
  /// How long a rank waits for the others: to join, to agree, and for each entry another rank
  /// owes it (counted from the agreement, so it must cover the slowest compile). A rank whose
  /// entry did not come in time compiles the kernel itself (with the user tier's lease: once
  /// per node).
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  /// For tests: called before each compile this rank does for the cohort, with the key's hex
  /// digest (a stall or a crash can be injected there).
  std::function<void(const std::string& key)> before_compile;
};

/// What one call did on this rank (for tests and benchmarks).
struct Report {
  std::size_t requests = 0; ///< this rank's requests
  std::size_t distinct = 0; ///< distinct keys of the whole job (0 when the ranks never agreed)
  std::size_t compiled = 0; ///< keys this rank compiled for the cohort
  std::size_t shared = 0;   ///< keys this rank handed out from one of its tiers
  std::size_t received = 0; ///< entries this rank received from the others
  std::size_t alone = 0;    ///< requests served without the cohort (a rank owing it timed out)
  bool agreed = false;      ///< whether the ranks agreed on a plan
};

/// The Cache behind a C API handle, for libraries built on both APIs (jitcache_mpi's C entry
/// points). `cache` must not be null; the reference lives as long as the handle.
JITCACHE_EXPORT Cache& cache_of(jitcache_cache* cache);

} // namespace jitcache::cohort
