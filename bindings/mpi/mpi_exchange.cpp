#include <jitcache/mpi.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <list>
#include <string>
#include <thread>
#include <vector>

namespace jitcache::mpi {

namespace {

using cohort::Clock;

constexpr int k_tag = 7301;

// The pause before the next test of a pending call that has waited `waited`: a sixteenth of it,
// within [50 us, 10 ms]. A call answered at once costs little; one that waits overshoots its
// answer by at most about 6% (a collective on oversubscribed ranks completes one step at a time,
// each waiting for a rank's next test: with pauses doubling to 10 ms, a warm start of 16 ranks
// on 2 cores took 0.28 s against 0.12 s); ranks that wait through a compile (seconds) test 100
// times a second, leaving the cores to the ranks compiling (at a fixed 0.5 ms, 16 ranks waiting
// on 2 cores spent as much CPU as the compiles).
std::chrono::microseconds pause_after(Clock::duration waited) {
  constexpr std::chrono::microseconds first{50}, last{10000};
  return std::clamp(std::chrono::duration_cast<std::chrono::microseconds>(waited) / 16, first,
                    last);
}

Error mpi_error(const char* call, int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return Error(ErrorCode::runtime_error, std::string(call) + " failed: " + text);
}

} // namespace

// What a call left pending when it gave up (a rank that never came): MPI may still write into
// these buffers, so they are kept, never freed, until the process exits.
struct Exchange::State {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm round = MPI_COMM_NULL; ///< this call's duplicate
  int rank = 0;
  int size = 1;
  struct Send {
    std::string bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::list<Send> sends;
  struct Abandoned {
    std::vector<std::uint64_t> sizes;
    std::string gathered;
    std::vector<int> counts, offsets;
    std::string mine;
    MPI_Comm comm = MPI_COMM_NULL;
    std::list<Send> sends;
    std::string received;
  };

  // Tests `request` until it completes (or fails: a rank died) or `deadline` passes (then
  // false: still pending).
  static bool wait(MPI_Request& request, Clock::time_point deadline) {
    for (const auto start = Clock::now();;) {
      int done = 0;
      if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done)
        return true;
      const auto now = Clock::now();
      if (now >= deadline)
        return false;
      std::this_thread::sleep_for(pause_after(now - start));
    }
  }

  // Keeps `abandoned` alive for the rest of the process (see above).
  static void keep(Abandoned* abandoned) {
    static std::list<std::unique_ptr<Abandoned>> kept;
    kept.emplace_back(abandoned);
  }
};

Exchange::Exchange(MPI_Comm comm) : m_state(std::make_unique<State>()) {
  m_state->comm = comm;
  MPI_Comm_rank(comm, &m_state->rank);
  MPI_Comm_size(comm, &m_state->size);
}

Exchange::~Exchange() {
  end(Clock::now());
}

int Exchange::rank() const {
  return m_state->rank;
}

int Exchange::size() const {
  return m_state->size;
}

Expected<void> Exchange::begin(Clock::time_point deadline) {
  end(Clock::now());
  auto* pending = new State::Abandoned; // the duplicate is written when the call completes
  MPI_Request request = MPI_REQUEST_NULL;
  if (int rc = MPI_Comm_idup(m_state->comm, &pending->comm, &request); rc != MPI_SUCCESS) {
    delete pending;
    return mpi_error("MPI_Comm_idup", rc);
  }
  if (!State::wait(request, deadline)) {
    State::keep(pending);
    return Error(ErrorCode::runtime_error, "not every rank joined in time (MPI_Comm_idup)");
  }
  m_state->round = pending->comm;
  // A rank that died (in a job run with mpirun --enable-recovery) is an error returned to the
  // call that meets it, not the job's abort: the others compile what it owed.
  MPI_Comm_set_errhandler(m_state->round, MPI_ERRORS_RETURN);
  delete pending;
  return {};
}

Expected<std::vector<std::string>> Exchange::allgather(const std::string& mine,
                                                       Clock::time_point deadline) {
  State& s = *m_state;
  if (s.round == MPI_COMM_NULL)
    return Error(ErrorCode::invalid_argument, "allgather() outside begin() and end()");
  auto* call = new State::Abandoned;
  call->mine = mine;
  call->sizes.assign(s.size, 0);
  std::uint64_t own = mine.size();
  MPI_Request request = MPI_REQUEST_NULL;
  if (int rc = MPI_Iallgather(&own, 1, MPI_UINT64_T, call->sizes.data(), 1, MPI_UINT64_T, s.round,
                              &request);
      rc != MPI_SUCCESS) {
    delete call;
    return mpi_error("MPI_Iallgather", rc);
  }
  if (!State::wait(request, deadline)) {
    State::keep(call);
    return Error(ErrorCode::runtime_error, "not every rank answered in time (MPI_Iallgather)");
  }
  std::uint64_t total = 0;
  for (int rank = 0; rank < s.size; ++rank) {
    call->offsets.push_back(static_cast<int>(total));
    call->counts.push_back(static_cast<int>(call->sizes[rank]));
    total += call->sizes[rank];
  }
  call->gathered.assign(total, '\0');
  if (int rc = MPI_Iallgatherv(call->mine.data(), static_cast<int>(call->mine.size()), MPI_BYTE,
                               call->gathered.data(), call->counts.data(), call->offsets.data(),
                               MPI_BYTE, s.round, &request);
      rc != MPI_SUCCESS) {
    delete call;
    return mpi_error("MPI_Iallgatherv", rc);
  }
  if (!State::wait(request, deadline)) {
    State::keep(call);
    return Error(ErrorCode::runtime_error, "not every rank answered in time (MPI_Iallgatherv)");
  }
  std::vector<std::string> all;
  for (int rank = 0; rank < s.size; ++rank)
    all.push_back(call->gathered.substr(call->offsets[rank], call->counts[rank]));
  delete call;
  return all;
}

Expected<void> Exchange::send(int to, std::string bytes) {
  State& s = *m_state;
  if (s.round == MPI_COMM_NULL)
    return Error(ErrorCode::invalid_argument, "send() outside begin() and end()");
  State::Send& send = s.sends.emplace_back();
  send.bytes = std::move(bytes);
  if (int rc = MPI_Isend(send.bytes.data(), static_cast<int>(send.bytes.size()), MPI_BYTE, to,
                         k_tag, s.round, &send.request);
      rc != MPI_SUCCESS) {
    s.sends.pop_back();
    return mpi_error("MPI_Isend", rc);
  }
  return {};
}

Expected<std::optional<std::string>> Exchange::receive(int from, Clock::time_point deadline) {
  State& s = *m_state;
  if (s.round == MPI_COMM_NULL)
    return Error(ErrorCode::invalid_argument, "receive() outside begin() and end()");
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  for (const auto start = Clock::now();;) {
    int found = 0;
    if (int rc = MPI_Improbe(from, k_tag, s.round, &found, &message, &status); rc != MPI_SUCCESS)
      return mpi_error("MPI_Improbe", rc);
    if (found)
      break;
    const auto now = Clock::now();
    if (now >= deadline)
      return std::optional<std::string>();
    std::this_thread::sleep_for(pause_after(now - start));
  }
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  auto* call = new State::Abandoned;
  call->received.assign(static_cast<std::size_t>(count), '\0');
  MPI_Request request = MPI_REQUEST_NULL;
  if (int rc = MPI_Imrecv(call->received.data(), count, MPI_BYTE, &message, &request);
      rc != MPI_SUCCESS) {
    delete call;
    return mpi_error("MPI_Imrecv", rc);
  }
  if (!State::wait(request, deadline)) {
    State::keep(call);
    return std::optional<std::string>();
  }
  std::optional<std::string> got(std::move(call->received));
  delete call;
  return got;
}

void Exchange::end(Clock::time_point deadline) {
  State& s = *m_state;
  bool all = true;
  for (State::Send& send : s.sends)
    all = State::wait(send.request, deadline) && all;
  if (!all) { // a receiver gave up: its sends stay pending, and the duplicate with them
    auto* left = new State::Abandoned;
    left->sends = std::move(s.sends);
    left->comm = s.round;
    State::keep(left);
  } else if (s.round != MPI_COMM_NULL) {
    MPI_Comm_free(&s.round);
  }
  s.sends.clear();
  s.round = MPI_COMM_NULL;
}

} // namespace jitcache::mpi
