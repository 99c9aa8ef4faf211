// The cross-process compile lease: one holder per key, waiters that take over from a holder
// that died or ran past its lease, other keys never waiting, leftovers reaped.
#include "core/engine/compile_lease.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

namespace jitcache {
namespace {

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

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

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
  auto child = holder(k_key, quick(), [&] {
    std::this_thread::sleep_for(300ms);
    std::ofstream(stored) << "binary"; // the holder stores, then lets go
  });
  int looks = 0;
  auto lease = CompileLease::acquire(
      leases(), k_key,
      [&] {
        ++looks;
        return std::filesystem::exists(stored);
      },
      quick());
  ASSERT_TRUE(lease) << lease.error().message;
  EXPECT_EQ(*lease, nullptr) << "the entry was stored: nothing to compile";
  EXPECT_GT(looks, 1);
  EXPECT_EQ(child->wait(), 0);
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
  std::thread killer([&] {
    std::this_thread::sleep_for(200ms);
    child->kill(SIGKILL);
  });
  const auto start = std::chrono::steady_clock::now();
  auto lease = CompileLease::acquire(leases(), k_key, never, quick());
  const double waited = seconds_since(start);
  killer.join();
  ASSERT_TRUE(lease && *lease);
  ASSERT_TRUE((*lease)->taken_from());
  EXPECT_EQ((*lease)->taken_from()->pid, holder_pid);
  EXPECT_LT(waited, 5.0) << "a dead holder is detected at once, not after its lease";
  EXPECT_EQ(CompileLease::read(leases(), k_key)->pid, ::getpid());
}

TEST_F(CompileLeaseTest, OneWaiterTakesOverFromAHolderThatRanPastItsLease) {
  auto hung = holder(k_key, quick(300ms)); // alive, never lets go
  auto lease = CompileLease::acquire(leases(), k_key, never, quick());
  ASSERT_TRUE(lease && *lease);
  ASSERT_TRUE((*lease)->taken_from());
  EXPECT_EQ((*lease)->taken_from()->pid, hung->pid());
  EXPECT_EQ(CompileLease::read(leases(), k_key)->generation, 1u);
  // A second waiter now waits for the new holder, not for the hung one: it does not get the
  // lease while we hold it (our lease is fresh), and loads what we store.
  const auto stored = dir.path() / "stored";
  ChildProcess second([&] {
    auto got = CompileLease::acquire(
        leases(), k_key, [&] { return std::filesystem::exists(stored); },
        quick(std::chrono::minutes(2)));
    return got && !*got ? 0 : 3;
  });
  std::this_thread::sleep_for(400ms);
  std::ofstream(stored) << "binary";
  lease->reset();
  EXPECT_EQ(second.wait(), 0) << second.err();
}

TEST_F(CompileLeaseTest, OtherKeysNeverWait) {
  auto child = holder(k_key);
  const auto start = std::chrono::steady_clock::now();
  auto lease = CompileLease::acquire(leases(), k_other, never, quick());
  ASSERT_TRUE(lease && *lease);
  EXPECT_LT(seconds_since(start), 1.0);
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

std::string bytes_of(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
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
  EXPECT_EQ(bytes_of(victim), "precious");
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
