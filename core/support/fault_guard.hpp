#pragma once

// Containing faults raised inside the store: SIGSEGV and SIGBUS while this thread reads or
// writes a memory-mapped file that may be damaged, and LMDB's own assertions (see escape()).
//
// One process-wide handler for SIGSEGV and SIGBUS (install()) jumps back to the innermost
// guarded() region of the faulting thread; a fault in a thread that is in no region, in an
// unguarded() part of one, or a signal sent by another process (kill), goes to the handler
// the application had when install() ran, exactly as if jitcache had never been there:
// SA_SIGINFO handlers get the same arguments, plain handlers the signal number, SIG_IGN ignores
// a sent signal, and SIG_DFL (or SIG_IGN for a real fault, which the kernel does not let a
// program ignore) puts the default action back and lets the fault happen again, so the process
// dies with the same signal, core dump and exit status as without jitcache.
//
// A handler that the application installs after install() replaces ours: jitcache does not
// fight it, and a fault inside the store then reaches the application's handler (as it would
// without jitcache). An application that saves and chains to the handler it replaced keeps the
// containment.
//
// What a contained fault leaves behind: the code that faulted stopped at an unknown point.
// Destructors of the frames jumped over do not run (their memory leaks), and locks they held
// stay held: a region must hold no lock of ours, and whatever it was using (an LMDB environment)
// must never be used again by this process (see LmdbStore::Env::poison).

#include <csetjmp>
#include <string>
#include <utility>

namespace jitcache::fault {

/// What guarded() returns when its body faulted: outside LMDB's error codes
/// (MDB_KEYEXIST..MDB_LAST_ERRCODE) and errno values.
constexpr int k_fault = -30600;

/// Installs the handler once per process (later calls do nothing). Thread-safe.
void install();

namespace detail {

/// A guarded region on a thread's stack of regions (internal to guarded()).
struct Region {
  sigjmp_buf jump;
  Region* outer = nullptr;
  void enter();
  void leave();
  ~Region();
};

/// Leaves every guarded region of this thread for its lifetime (internal to unguarded()).
struct Pause {
  Region* saved;
  Pause();
  ~Pause();
};

/// Calls `body` in a frame of its own: nothing of it lives in guarded()'s frame, where the jump
/// lands (so no local of it can be clobbered there, and -Wclobbered has nothing to say).
template <typename Body> [[gnu::noinline]] int call_body(Body&& body) {
  return std::forward<Body>(body)();
}

} // namespace detail

/// Runs `body()` (which returns an int status) on this thread; when a SIGSEGV or SIGBUS is
/// raised by the kernel in this thread while it runs, or by this process (a handler installed
/// after ours re-raising the fault), or escape() is called, returns k_fault
/// instead (last_fault() says what happened). Regions nest: a fault ends the innermost one.
/// Costs a sigsetjmp that saves no signal mask (no system call). Faults are caught once
/// install() has run; before, they go where they always went.
template <typename Body> int guarded(Body&& body) {
  detail::Region region;
  // Nothing of this frame is read after the jump: the handler already unlinked `region`.
  if (sigsetjmp(region.jump, 0) != 0)
    return k_fault;
  region.enter();
  const int status = detail::call_body(std::forward<Body>(body));
  region.leave();
  return status;
}

/// Runs `body()` outside any guarded region of this thread (faults in it go to the
/// application: code that is not the store's, such as a caller's callback) and returns its
/// result. Exceptions pass through; the regions are restored either way.
template <typename Body> decltype(auto) unguarded(Body&& body) {
  detail::Pause pause;
  return std::forward<Body>(body)();
}

/// When this thread is inside a guarded region: records `what` as the fault and leaves the
/// region as a fault does (does not return). Otherwise returns at once. For failures that are
/// not signals, such as LMDB's assertion callback (mdb_env_set_assert), whose failure would
/// otherwise abort(). Not async-signal-safe.
void escape(const char* what);

/// This thread's last contained fault, in words ("SIGSEGV at 0x1234", "SIGBUS at 0x...",
/// or the message given to escape()); empty when there was none.
std::string last_fault();

} // namespace jitcache::fault
