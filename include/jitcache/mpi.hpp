#pragma once

#include <jitcache/cohort.hpp>

#include <mpi.h>

#include <memory>

/// jitcache over MPI (libjitcache_mpi, built when Open MPI is found): an MPI communicator as a
/// cohort's Exchange, for the backends' set entry points (opencl::build_programs,
/// cuda::compile_together, hip::compile_together):
///
///     jitcache::mpi::Exchange exchange(MPI_COMM_WORLD);
///     auto programs = jitcache::opencl::build_programs(cache, exchange, requests);
///
/// MPI_Init must have been called, and MPI_Finalize not yet, for the Exchange's whole life.
/// Only the thread calling an entry point makes MPI calls, and only while in it.
namespace jitcache::mpi {

/// A communicator as a cohort's Exchange. Each call of an entry point works on a duplicate of
/// the communicator made for it (MPI_Comm_idup), so nothing left of an abandoned call (a rank
/// that gave up waiting) is ever mistaken for the next call's. Every wait is a loop of
/// nonblocking tests that gives up at its deadline: a rank that stalls or never joins delays
/// the others by at most Options::timeout. A rank that dies: by default Open MPI aborts the
/// whole job, whatever jitcache does; a job started with `mpirun --enable-recovery` carries on,
/// and the duplicate's calls return errors (MPI_ERRORS_RETURN) rather than abort, so the others
/// compile what the dead rank owed once Options::timeout passed (Open MPI 4.1's MPI_Finalize
/// may still wait for the dead rank afterwards: that is the job's). What an abandoned call left
/// pending (its buffers) is kept until the process exits.
class Exchange final : public cohort::Exchange {
public:
  /// `comm` must outlive the Exchange; it is not freed. Errors: none (MPI aborts on a bad
  /// communicator under its default error handler).
  explicit Exchange(MPI_Comm comm);
  ~Exchange() override;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  int rank() const override;
  int size() const override;
  Expected<void> begin(cohort::Clock::time_point deadline) override;
  Expected<std::vector<std::string>> allgather(const std::string& mine,
                                               cohort::Clock::time_point deadline) override;
  Expected<void> send(int to, std::string bytes) override;
  Expected<std::optional<std::string>> receive(int from,
                                               cohort::Clock::time_point deadline) override;
  void end(cohort::Clock::time_point deadline) override;

private:
  struct State;
  std::unique_ptr<State> m_state;
};

} // namespace jitcache::mpi
