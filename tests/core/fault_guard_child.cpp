// A fresh process for the fault guard's tests: installs the "application's" SIGSEGV action
// named by argv[1] before jitcache's handler, then faults as that mode says. Prints what it
// saw; the test checks its output and exit status.
#include "core/support/fault_guard.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

char* g_forbidden = nullptr; // a page that may not be read

void app_siginfo(int signal, siginfo_t* info, void*) {
  const bool same = info->si_addr == g_forbidden;
  std::printf("app siginfo handler: signal %d, %s\n", signal,
              info->si_code <= 0 ? "sent"
              : same             ? "same address"
                                 : "other address");
  std::fflush(stdout);
  ::_exit(42);
}

void app_plain(int signal) {
  std::printf("app plain handler: signal %d\n", signal);
  std::fflush(stdout);
  ::_exit(43);
}

int read_forbidden() {
  return *static_cast<volatile char*>(g_forbidden);
}

int read_truncated_map() {
  const int fd = ::memfd_create("fault_guard_child", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 8192) != 0)
    return 1;
  auto* map = static_cast<char*>(::mmap(nullptr, 8192, PROT_READ, MAP_SHARED, fd, 0));
  if (::ftruncate(fd, 0) != 0)
    return 1;
  return *static_cast<volatile char*>(map + 4096);
}

// What a handler installed after jitcache's does when it re-raises a fault it does not handle
// (LLVM's crash recovery): the signal comes again, sent by this process.
int raise_again() {
  return ::raise(SIGSEGV);
}

} // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const struct rlimit no_core { 0, 0 }; // the tests look at the exit status, not at a core file
  ::setrlimit(RLIMIT_CORE, &no_core);
  g_forbidden =
      static_cast<char*>(::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  struct sigaction app {};
  sigemptyset(&app.sa_mask);
  if (mode == "plain") {
    app.sa_handler = &app_plain;
  } else if (mode == "ignore") {
    app.sa_handler = SIG_IGN;
  } else if (mode != "default") {
    app.sa_sigaction = &app_siginfo;
    app.sa_flags = SA_SIGINFO;
  }
  if (mode != "default")
    ::sigaction(SIGSEGV, &app, nullptr);
  jitcache::fault::install();

  using jitcache::fault::guarded;
  if (mode == "contained") {
    // Contained in a region, twice (the handler works again after a jump), then a fault
    // outside any region reaches the application.
    for (int i = 0; i < 2; ++i) {
      const int rc = guarded(read_forbidden);
      std::printf("contained: %d %s\n", rc == jitcache::fault::k_fault,
                  jitcache::fault::last_fault().c_str());
    }
    for (auto* fault : {&read_truncated_map, &raise_again}) {
      const int rc = guarded(fault);
      std::printf("contained: %d %s\n", rc == jitcache::fault::k_fault,
                  jitcache::fault::last_fault().c_str());
    }
    std::fflush(stdout);
  } else if (mode == "unguarded") {
    guarded([] { return jitcache::fault::unguarded(read_forbidden); });
  } else if (mode == "sent") {
    // Sent by another process while this one is inside a region: not the store's fault.
    guarded([] {
      if (::fork() == 0) {
        ::kill(::getppid(), SIGSEGV);
        ::_exit(0);
      }
      for (;;)
        ::pause();
      return 0;
    });
  }
  read_forbidden();
  std::printf("not killed\n");
  return 0;
}
