#include "core/support/fault_guard.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace jitcache::fault {

namespace {

// What the last contained fault of a thread was; written by the signal handler (plain values
// only) or by escape().
struct Fault {
  int signal = 0;
  void* address = nullptr;
  char message[400] = {}; // LMDB's assertion messages fit (it formats them into 400 bytes)
};

// Read by the signal handler: plain thread_local values, no constructor, so reading them
// never runs code.
thread_local detail::Region* t_region = nullptr;
thread_local Fault t_fault;

constexpr int k_signals[] = {SIGSEGV, SIGBUS};
// The actions the application had before install(); written once, before our handler is in
// place, and only read afterwards.
struct sigaction g_previous[2];

const struct sigaction& previous(int signal) {
  return g_previous[signal == SIGSEGV ? 0 : 1];
}

void set_default(int signal) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(signal, &dfl, nullptr);
}

// Does what the kernel would have done with the application's own action. Only
// async-signal-safe calls.
void chain(int signal, siginfo_t* info, void* context, bool sent) {
  const struct sigaction& prev = previous(signal);
  const bool has_info = (prev.sa_flags & SA_SIGINFO) != 0;
  if (!has_info && (prev.sa_handler == SIG_DFL || prev.sa_handler == SIG_IGN)) {
    if (prev.sa_handler == SIG_IGN && sent)
      return; // a sent signal can be ignored; a real fault cannot (the kernel forces it)
    set_default(signal);
    // A real fault happens again when the faulting instruction runs again, now under the
    // default action: the core dump shows where it really was. A sent one is sent again.
    if (sent)
      ::raise(signal);
    return;
  }
  // The kernel blocks the handler's mask, and the signal itself unless SA_NODEFER, while the
  // handler runs; ours is installed with SA_NODEFER and an empty mask, so do that here.
  sigset_t mask = prev.sa_mask, old;
  if (!(prev.sa_flags & SA_NODEFER))
    sigaddset(&mask, signal);
  if (prev.sa_flags & SA_RESETHAND)
    set_default(signal);
  ::pthread_sigmask(SIG_BLOCK, &mask, &old);
  if (has_info)
    prev.sa_sigaction(signal, info, context);
  else
    prev.sa_handler(signal);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void on_fault(int signal, siginfo_t* info, void* context) {
  // si_code <= 0: sent (kill, raise, sigqueue), not raised by this thread's access. Sent by
  // this process counts as a fault too: a handler installed after ours that does not return
  // to re-raise a fault (LLVM's crash recovery, loaded with an OpenCL runtime) raise()s it.
  const bool sent = info == nullptr || info->si_code <= 0;
  const bool ours = !sent || info->si_pid == ::getpid();
  detail::Region* region = t_region;
  if (region && ours) {
    t_region = region->outer;
    t_fault.signal = signal;
    t_fault.address = sent ? nullptr : info->si_addr; // a sent signal has no address
    t_fault.message[0] = '\0';
    // Without a saved mask: SA_NODEFER kept the mask as it was when the region began.
    siglongjmp(region->jump, 1);
  }
  chain(signal, info, context, sent);
}

} // namespace

void install() {
  // A function's static, not std::call_once: its first pass makes no futex call (call_once's
  // wakes waiters every time), and every later one is a load.
  static const bool installed = [] {
    for (int i = 0; i < 2; ++i) {
      struct sigaction ours {};
      ours.sa_sigaction = &on_fault;
      // SA_ONSTACK: an application that prepared an alternate stack (for stack overflows)
      // still gets its handler run on it. SA_NODEFER: see chain().
      ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
      sigemptyset(&ours.sa_mask);
      // The handler it replaces read in the same call: none can be missed in between, and a
      // fresh process's first request makes one system call per signal, not two.
      ::sigaction(k_signals[i], &ours, &g_previous[i]);
    }
    return true;
  }();
  static_cast<void>(installed);
}

namespace detail {

void Region::enter() {
  outer = t_region;
  t_region = this;
}

void Region::leave() {
  t_region = outer;
}

Region::~Region() {
  if (t_region == this) // left by an exception
    t_region = outer;
}

Pause::Pause() : saved(t_region) {
  t_region = nullptr;
}

Pause::~Pause() {
  t_region = saved;
}

} // namespace detail

void escape(const char* what) {
  detail::Region* region = t_region;
  if (!region)
    return;
  t_region = region->outer;
  t_fault.signal = 0;
  t_fault.address = nullptr;
  std::snprintf(t_fault.message, sizeof t_fault.message, "%s", what);
  siglongjmp(region->jump, 1);
}

std::string last_fault() {
  if (t_fault.message[0])
    return t_fault.message;
  if (!t_fault.signal)
    return {};
  const std::string name = t_fault.signal == SIGSEGV ? "SIGSEGV" : "SIGBUS";
  if (!t_fault.address)
    return name + " raised again by a handler installed after jitcache's";
  char address[32];
  std::snprintf(address, sizeof address, "%p", t_fault.address);
  return name + " at " + address;
}

} // namespace jitcache::fault
