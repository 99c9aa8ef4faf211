// The cross-process compile lease: one holder per key, waiters that take over from a holder
// that died or ran past its lease, other keys never waiting, leftovers reaped.
#include "core/engine/compile_lease.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/fake_clock.hpp"
#include "tests/support/files.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>

namespace jitcache {

using detail::CacheDir;
using detail::CompileLease;
namespace {
using test::read_file;

using namespace std::chrono_literals;
using test::ChildProcess;

const Digest k_key = Digest::of("kernel A");
const Digest k_other = Digest::of("kernel B");

CompileLease::Options quick(std::chrono::milliseconds duration = std::chrono::minutes(2)) {
  CompileLease::Options options;
  options.duration = duration;
  options.max_poll = 10ms;
  return options;
}

bool never() {
  return false;
}

// A pipe from the parent to a child: the child's wait() returns once the parent called go().
class Signal {
public:
  Signal() { EXPECT_EQ(::pipe(m_fds), 0); }
  ~Signal() {
    ::close(m_fds[0]);
    ::close(m_fds[1]);
  }
  void go() { EXPECT_EQ(::write(m_fds[1], "g", 1), 1); }
  void wait() {
    char c = 0;
    EXPECT_EQ(::read(m_fds[0], &c, 1), 1);
  }

private:
  int m_fds[2] = {-1, -1};
};

class CompileLeaseTest : public ::testing::Test {
protected:
  CacheDir leases() const {
    return CacheDir::open(dir.path()).value().subdir("leases", true).value();
  }
  std::filesystem::path lease_path() const { return dir.path() / "leases"; }
  // A child that takes the lease for `key`, says "held", and then does `then` (wait forever by
  // default: the parent kills it).
  std::unique_ptr<ChildProcess> holder(
      const Digest& key, CompileLease::Options options = quick(),
      std::function<void()> then = [] { ::pause(); }) {
    auto child = std::make_unique<ChildProcess>([=] {
      auto lease = CompileLease::acquire(leases(), key, never, options);
      if (!lease || !*lease)
        return 2;
      ChildProcess::tell_parent("held");
      then();
      return 0;
    });
    EXPECT_EQ(child->next_message(), "held");
    return child;
  }
  test::TempDir dir;
};

TEST_F(CompileLeaseTest, AWaiterLoadsWhatTheHolderStoredInsteadOfCompiling) {
  const auto stored = dir.path() / "stored";
  Signal store;
  auto child = holder(k_key, quick(), [&] {
    store.wait();
    std::ofstream(stored) << "binary"; // the holder stores, then lets go
  });
  test::FakeClock clock(test::FakeClock::Sleep::waits);
  int looks = 0;
  Expected<std::unique_ptr<CompileLease>> lease = Error();
  std::thread waiter([&] {
    lease = CompileLease::acquire(
        leases(), k_key,
        [&] {
          ++looks;
          return std::filesystem::exists(stored);
        },
        quick());
  });
  ASSERT_TRUE(clock.wait_for_sleepers(1)); // the waiter found the lease held
  store.go();
  EXPECT_EQ(child->wait(), 0);
  clock.advance(10ms); // its next look
  waiter.join();
  ASSERT_TRUE(lease) << lease.error().message;
  EXPECT_EQ(*lease, nullptr) << "the entry was stored: nothing to compile";
  EXPECT_GT(looks, 1);
  EXPECT_FALSE(std::filesystem::exists(lease_path() / k_key.hex()))
      << "the holder removes its file";
}

TEST_F(CompileLeaseTest, AWaiterTakesOverAtOnceFromAKilledHolder) {
  auto child = holder(k_key);
  const pid_t holder_pid = child->pid();
  const auto record = CompileLease::read(leases(), k_key);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->pid, holder_pid);
  EXPECT_GT(record->expires_ms, record->start_ms);
  test::FakeClock clock(test::FakeClock::Sleep::waits);
  Expected<std::unique_ptr<CompileLease>> lease = Error();
  std::thread waiter([&] { lease = CompileLease::acquire(leases(), k_key, never, quick()); });
  ASSERT_TRUE(clock.wait_for_sleepers(1)); // the waiter found the lease held
  child->kill(SIGKILL);
  child->wait();
  clock.advance(10ms); // its next look
  waiter.join();
  ASSERT_TRUE(lease && *lease);
  ASSERT_TRUE((*lease)->taken_from());
  EXPECT_EQ((*lease)->taken_from()->pid, holder_pid);
  EXPECT_LE(clock.slept(), 10ms) << "a dead holder is detected at once, not after its lease";
  EXPECT_EQ(CompileLease::read(leases(), k_key)->pid, ::getpid());
}

TEST_F(CompileLeaseTest, OneWaiterTakesOverFromAHolderThatRanPastItsLease) {
  const auto before = std::chrono::steady_clock::now();
  auto hung = holder(k_key, quick(std::chrono::minutes(1))); // alive, never lets go
  std::optional<test::FakeClock> clock(std::in_place);       // its pauses pass its minute at once
  auto lease = CompileLease::acquire(leases(), k_key, never, quick());
  ASSERT_TRUE(lease && *lease);
  // The lease's minute runs on the real clock from the holder's start, then on the pauses.
  EXPECT_GE(clock->slept() + (std::chrono::steady_clock::now() - before), std::chrono::minutes(1))
      << "taken over once the lease ran out";
  clock.reset();
  ASSERT_TRUE((*lease)->taken_from());
  EXPECT_EQ((*lease)->taken_from()->pid, hung->pid());
  EXPECT_EQ(CompileLease::read(leases(), k_key)->generation, 1u);
  // A second waiter now waits for the new holder, not for the hung one: it does not get the
  // lease while we hold it (our lease is fresh), and loads what we store.
  const auto stored = dir.path() / "stored";
  ChildProcess second([&] {
    int looks = 0;
    auto got = CompileLease::acquire(
        leases(), k_key,
        [&] {
          if (++looks == 5)
            ChildProcess::tell_parent("waited");
          return std::filesystem::exists(stored);
        },
        quick(std::chrono::minutes(2)));
    return got && !*got ? 0 : 3;
  });
  EXPECT_EQ(second.next_message(), "waited");
  std::ofstream(stored) << "binary";
  lease->reset();
  EXPECT_EQ(second.wait(), 0) << second.err();
}

TEST_F(CompileLeaseTest, OtherKeysNeverWait) {
  auto child = holder(k_key);
  test::FakeClock clock;
  auto lease = CompileLease::acquire(leases(), k_other, never, quick());
  ASSERT_TRUE(lease && *lease);
  EXPECT_EQ(clock.slept(), 0ns);
  EXPECT_FALSE((*lease)->taken_from());
}

TEST_F(CompileLeaseTest, AForkedChildDoesNotLetGoOfItsParentsLease) {
  auto lease = CompileLease::acquire(leases(), k_key, never, quick());
  ASSERT_TRUE(lease && *lease);
  ChildProcess copy([&] {
    lease->reset(); // the child's copy of the lease is destroyed
    return 0;
  });
  ASSERT_EQ(copy.wait(), 0);
  // Another process still finds the lease held: it gives up waiting once `ready` says so.
  ChildProcess waiter([&] {
    int looks = 0;
    auto got = CompileLease::acquire(
        leases(), k_key, [&] { return ++looks > 20; }, quick());
    return got && !*got ? 0 : 4;
  });
  EXPECT_EQ(waiter.wait(), 0) << "the lease was released by the forked child";
}

TEST_F(CompileLeaseTest, ReapRemovesOnlyFilesNobodyHolds) {
  auto dead = holder(k_key);
  dead->kill(SIGKILL);
  dead->wait();
  auto alive = holder(k_other);
  ASSERT_TRUE(std::filesystem::exists(lease_path() / k_key.hex())) << "a killed holder leaves it";
  EXPECT_EQ(CompileLease::reap(leases()), 1u);
  EXPECT_FALSE(std::filesystem::exists(lease_path() / k_key.hex()));
  EXPECT_TRUE(std::filesystem::exists(lease_path() / k_other.hex()));
}

// A hand-over marker says the key was compiled here with its store pending; reap keeps it for a
// day (the store may still come), then removes it, and never takes it for a lease.
TEST_F(CompileLeaseTest, AHandOverMarkerIsSeenUntilReapedADayLater) {
  EXPECT_FALSE(CompileLease::handed_over(leases(), k_key));
  CompileLease::mark_handed_over(leases(), k_key);
  CompileLease::mark_handed_over(leases(), k_key); // twice: still one marker
  EXPECT_TRUE(CompileLease::handed_over(leases(), k_key));
  EXPECT_FALSE(CompileLease::handed_over(leases(), k_other));
  EXPECT_EQ(CompileLease::reap(leases()), 0u);
  EXPECT_TRUE(CompileLease::handed_over(leases(), k_key)) << "a fresh marker is kept";
  const auto marker = lease_path() / (k_key.hex() + ".handed");
  const timespec times[2] = {{::time(nullptr) - 25 * 3600, 0}, {::time(nullptr) - 25 * 3600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, marker.c_str(), times, 0), 0);
  CompileLease::reap(leases());
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a day-old marker is removed";
  EXPECT_FALSE(CompileLease::handed_over(leases(), k_key));
}

TEST_F(CompileLeaseTest, ALinkAtALeaseFileIsNeverFollowed) {
  test::TempDir elsewhere;
  const auto victim = elsewhere.path() / "victim";
  std::ofstream(victim) << "precious";
  std::filesystem::create_directory(lease_path());
  std::filesystem::create_symlink(victim, lease_path() / k_key.hex());
  std::filesystem::create_hard_link(victim, lease_path() / k_other.hex());
  for (const Digest& key : {k_key, k_other}) {
    auto lease = CompileLease::acquire(leases(), key, never, quick());
    ASSERT_FALSE(lease);
    EXPECT_EQ(lease.error().code, ErrorCode::io_error);
    EXPECT_NE(lease.error().message.find(key.hex()), std::string::npos) << lease.error().message;
  }
  EXPECT_EQ(CompileLease::reap(leases()), 0u);
  EXPECT_EQ(read_file(victim), "precious");
  EXPECT_TRUE(std::filesystem::is_symlink(lease_path() / k_key.hex()));
}

TEST_F(CompileLeaseTest, ALeaseDirectoryThatIsALinkIsNeverOpened) {
  test::TempDir elsewhere;
  std::filesystem::create_directory_symlink(elsewhere.path(), lease_path());
  auto leases = CacheDir::open(dir.path()).value().subdir("leases", true);
  ASSERT_FALSE(leases);
  EXPECT_NE(leases.error().message.find("is a symbolic link"), std::string::npos)
      << leases.error().message;
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere.path()));
}

} // namespace
} // namespace jitcache
