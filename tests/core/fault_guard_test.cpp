// The fault guard: faults inside a guarded region come back as a status; every other fault
// reaches the application's own action, exactly (checked in fresh processes, where the
// application's action is installed before jitcache's handler).
#include "core/support/fault_guard.hpp"

#include "tests/support/process.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>

#include <stdexcept>

namespace jitcache {
namespace {

int read_forbidden_page() {
  static char* page =
      static_cast<char*>(::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  return *static_cast<volatile char*>(page);
}

test::ProcessResult run_child(const std::string& mode) {
  return test::run_process({FAULT_GUARD_CHILD, mode});
}

TEST(FaultGuard, ReturnsTheBodysStatusWhenNothingFaults) {
  fault::install();
  EXPECT_EQ(fault::guarded([] { return 7; }), 7);
}

TEST(FaultGuard, AFaultInsideARegionBecomesAStatus) {
  fault::install();
  EXPECT_EQ(fault::guarded(read_forbidden_page), fault::k_fault);
  EXPECT_EQ(fault::last_fault().rfind("SIGSEGV at 0x", 0), 0u) << fault::last_fault();
}

TEST(FaultGuard, RegionsNestAndAFaultEndsOnlyTheInnermost) {
  fault::install();
  int inner = 0;
  const int outer = fault::guarded([&] {
    inner = fault::guarded(read_forbidden_page);
    return 5;
  });
  EXPECT_EQ(inner, fault::k_fault);
  EXPECT_EQ(outer, 5);
  // Both regions are gone: escape() outside any returns.
  fault::escape("nobody catches this");
}

TEST(FaultGuard, EscapeLeavesTheRegionWithItsMessage) {
  fault::install();
  bool after = false;
  EXPECT_EQ(fault::guarded([&] {
              fault::escape("mdb.c:1: Assertion 'x > 1' failed in f()");
              after = true;
              return 0;
            }),
            fault::k_fault);
  EXPECT_FALSE(after);
  EXPECT_EQ(fault::last_fault(), "mdb.c:1: Assertion 'x > 1' failed in f()");
}

TEST(FaultGuard, AnExceptionLeavesTheRegion) {
  fault::install();
  EXPECT_THROW(fault::guarded([]() -> int { throw std::runtime_error("x"); }), std::runtime_error);
  fault::escape("outside every region: returns");
}

TEST(FaultGuard, ContainsSegvBusAndReraisedFaultsThenChainsAFaultOutside) {
  const auto r = run_child("contained");
  EXPECT_EQ(r.exit_code, 42) << r.out << r.err;
  EXPECT_NE(r.out.find("contained: 1 SIGSEGV at 0x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("contained: 1 SIGBUS at 0x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("contained: 1 SIGSEGV raised again"), std::string::npos) << r.out; // raised
  EXPECT_NE(r.out.find("app siginfo handler: signal 11, same address"), std::string::npos) << r.out;
}

TEST(FaultGuard, AFaultOutsideARegionReachesTheApplicationsSiginfoHandler) {
  const auto r = run_child("siginfo");
  EXPECT_EQ(r.exit_code, 42) << r.out << r.err;
  EXPECT_NE(r.out.find("app siginfo handler: signal 11, same address"), std::string::npos) << r.out;
}

TEST(FaultGuard, AFaultOutsideARegionReachesTheApplicationsPlainHandler) {
  const auto r = run_child("plain");
  EXPECT_EQ(r.exit_code, 43) << r.out << r.err;
  EXPECT_NE(r.out.find("app plain handler: signal 11"), std::string::npos) << r.out;
}

TEST(FaultGuard, TheDefaultActionStillKillsWithSigsegv) {
  for (const char* mode : {"default", "ignore"}) {
    const auto r = run_child(mode);
    EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << mode << r.out << r.err;
    EXPECT_EQ(r.out.find("not killed"), std::string::npos) << mode;
  }
}

TEST(FaultGuard, UnguardedCodeAndSentSignalsGoToTheApplication) {
  for (const char* mode : {"unguarded", "sent"}) {
    const auto r = run_child(mode);
    EXPECT_EQ(r.exit_code, 42) << mode << r.out << r.err;
    const char* seen = std::string(mode) == "sent" ? "signal 11, sent" : "signal 11, same address";
    EXPECT_NE(r.out.find(seen), std::string::npos) << mode << r.out;
  }
}

} // namespace
} // namespace jitcache
