// One LMDB environment per directory per process (LmdbStore::open's registry), also while one
// closes: closing an environment clears this process's reader slots and drops every POSIX lock
// it holds on the lock file, so an environment opened for the same directory before the old one
// finished closing would go on without its locks (another process could then reset the reader
// table, or reuse the pages of a snapshot this one reads). And a child forked while another
// thread opens or closes a tier can open it too.
#include "core/tiers/user/lmdb_store.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/lock_holder.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/thread_syscall.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

namespace jitcache {

using detail::LmdbStore;

namespace {

namespace fs = std::filesystem;
using test::ChildProcess;

class LmdbRegistry : public ::testing::Test {
protected:
  void SetUp() override {
    ChildProcess maker([&] { // this process opens it only in the tests
      auto store = LmdbStore::open(tier(), false);
      return store && (*store)->put(key, Entry{"opencl", "BINARY"}) ? 0 : 1;
    });
    ASSERT_EQ(maker.wait(), 0) << maker.err();
  }
  fs::path tier() const { return dir.path() / "v1"; }

  // Whether `store` hits `key` with what SetUp stored.
  bool hits(LmdbStore& store) const {
    auto got = store.get(key);
    return got && *got && (*got)->payload == "BINARY";
  }

  test::TempDir dir;
  const Digest key = Digest::of("registry");
};

// Spins for `micros` microseconds (a sleep would round up to the scheduler's tick).
void spin_for(int micros) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  while (std::chrono::steady_clock::now() < until) {
  }
}

TEST_F(LmdbRegistry, ATierClosedByOneThreadWhileAnotherOpensItLeavesTheNewOneItsLocks) {
  // Many trials, each with the opening thread started at a random point of the other's close,
  // while another process has the tier open (so the close does not take the gate alone, which
  // would hold the opening thread back): whatever the interleaving, the environment in use
  // afterwards must still read through its pooled reader slots, and hold the lock on the byte
  // at this pid that tells other processes those slots are live. (Without the wait for the
  // close, 1 to 3 trials in 1000 lost them on a 2-core machine, in 4 runs of 5.)
  ChildProcess holder([&] {
    auto store = LmdbStore::open(tier(), false);
    if (!store || !hits(**store))
      return 1;
    ChildProcess::tell_parent("open");
    ::pause();
    return 0;
  });
  ASSERT_EQ(holder.next_message(), std::optional<std::string>("open")) << holder.err();
  // Asked once per trial whether this process holds the lock on the byte at its pid (it holds
  // no lock there itself: the descriptor it opens and closes would drop them).
  const fs::path lock = tier() / "lock.mdb";
  const pid_t self = ::getpid();
  int ask[2];
  ASSERT_EQ(::pipe(ask), 0);
  ChildProcess prober([&] {
    ::close(ask[1]);
    using Held = std::pair<int, pid_t>;
    for (char c; ::read(ask[0], &c, 1) == 1;)
      ChildProcess::tell_parent(
          test::lock_holder(lock, F_RDLCK, self) == Held(F_WRLCK, self) ? "held" : "lost");
    return 0;
  });
  ::close(ask[0]);
  std::mt19937 random(20261129);
  int lost = 0;
  constexpr int k_trials = 2000;
  for (int trial = 0; trial < k_trials; ++trial) {
    auto first = LmdbStore::open(tier(), false);
    ASSERT_TRUE(first) << first.error().message;
    ASSERT_TRUE(hits(**first)); // its readers are live
    std::shared_ptr<LmdbStore> closing = std::move(*first);
    std::shared_ptr<LmdbStore> second;
    const int delay = std::uniform_int_distribution<int>(0, 200)(random);
    std::atomic<int> ready{0};
    std::thread closer([&] {
      ++ready;
      while (ready.load() < 2) {
      }
      closing.reset(); // the last handle: the environment closes
    });
    std::thread opener([&] {
      ++ready;
      while (ready.load() < 2) {
      }
      spin_for(delay);
      if (auto opened = LmdbStore::open(tier(), false); opened && hits(**opened))
        second = std::move(*opened);
    });
    closer.join();
    opener.join();
    ASSERT_TRUE(second) << "trial " << trial << ": the second open or its read failed";
    ASSERT_EQ(::write(ask[1], "?", 1), 1);
    const auto answer = prober.next_message();
    ASSERT_TRUE(answer) << prober.err();
    lost += *answer != "held" || !hits(*second);
  }
  EXPECT_EQ(lost, 0) << "in " << lost << " of " << k_trials
                     << " trials the environment in use had lost its reader slots or their lock";
  ::close(ask[1]);
  EXPECT_EQ(prober.wait(), 0);
  holder.kill(SIGKILL);
  holder.wait();
}

TEST_F(LmdbRegistry, AChildForkedWhileAnotherThreadOpensAndClosesTheTierOpensItToo) {
  // The other thread holds the registry's lock for much of each open, and the gate exclusively
  // for a moment of each close (no other process has the tier open: a clean end). A child forked
  // meanwhile must find neither held: it would wait forever for a thread it does not have, or
  // for its own copy of the gate's descriptor. (Before, 14 to 20 children of 20 hung.)
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::thread churn([&] {
    while (!stop.load()) {
      if (auto store = LmdbStore::open(tier(), false); store && hits(**store))
        ++rounds;
    }
  });
  while (rounds.load() == 0)
    std::this_thread::yield();
  int hung = 0;
  constexpr int k_children = 20;
  for (int i = 0; i < k_children; ++i) {
    ChildProcess child([&] {
      ::alarm(10); // a child that waits for the registry's lock is ended, and counted
      auto store = LmdbStore::open(tier(), false);
      return store && hits(**store) ? 0 : 1;
    });
    const int status = child.wait();
    hung += status == 128 + SIGALRM;
    EXPECT_TRUE(status == 0 || status == 128 + SIGALRM) << child.err();
  }
  stop = true;
  churn.join();
  EXPECT_EQ(hung, 0) << hung << " of " << k_children << " children never finished their open";
  EXPECT_GT(rounds.load(), 0);
}

TEST_F(LmdbRegistry, AChildForkedBeforeItsParentClosesTheTierKeepsNoneOfTheParentsGate) {
  // The parent's close takes the gate exclusively (no other process has the tier open: a clean
  // end) and lets go. The child shares that hold through its copy of the descriptor: had the
  // parent only closed its own, the child would keep the gate exclusive, and every open (its
  // own too) would wait for the child to exit.
  auto store = LmdbStore::open(tier(), false);
  ASSERT_TRUE(store && hits(**store));
  const fs::path go = dir.path() / "go";
  ChildProcess child([&] {
    ::alarm(60);
    ChildProcess::tell_parent("forked");
    while (!fs::exists(go))
      ::usleep(1000);
    auto own = LmdbStore::open(tier(), false);
    return own && hits(**own) ? 0 : 1;
  });
  ASSERT_EQ(child.next_message(), std::optional<std::string>("forked")) << child.err();
  fs::remove(tier() / "closed"); // SetUp's process left it: made again only by a close alone
  store->reset();                // the last handle: the parent's environment closes
  EXPECT_TRUE(fs::exists(tier() / "closed")) << "the close did not hold the gate alone";
  ChildProcess other([&] {
    ::alarm(60);
    auto opened = LmdbStore::open(tier(), false);
    if (!opened)
      std::fprintf(stderr, "%s\n", opened.error().message.c_str());
    return opened && hits(**opened) ? 0 : 1;
  });
  EXPECT_EQ(other.wait(), 0) << other.err();
  std::ofstream(go).put('\n');
  EXPECT_EQ(child.wait(), 0) << child.err();
}

TEST_F(LmdbRegistry, AForkWhileAnotherThreadWaitsToOpenATierDoesNotWaitForIt) {
  // Another process holds the gate exclusively (as a compaction does), so a thread's open waits
  // at it (up to 30 s). The registry's lock is not held meanwhile: a fork (whose prepare step
  // waits until no thread holds a ForkSafeMutex) goes ahead at once.
  const fs::path go = dir.path() / "go";
  ChildProcess compacting([&] {
    ::alarm(60);
    const int fd = ::open((tier() / "gate").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0)
      return 1;
    ChildProcess::tell_parent("held");
    while (!fs::exists(go))
      ::usleep(1000);
    return 0;
  });
  ASSERT_EQ(compacting.next_message(), std::optional<std::string>("held")) << compacting.err();
  std::atomic<pid_t> opener_tid{0};
  std::atomic<bool> opened{false};
  bool hit = false;
  std::thread opener([&] {
    opener_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    auto store = LmdbStore::open(tier(), false);
    hit = store && hits(**store);
    opened = true;
  });
  while (opener_tid.load() == 0)
    std::this_thread::yield();
  test::wait_until_in_syscall(opener_tid.load(), {SYS_clock_nanosleep, SYS_nanosleep}); // gate
  ChildProcess forked([] { return 0; });
  EXPECT_EQ(forked.wait(), 0);
  EXPECT_FALSE(opened.load()) << "the fork waited for the open";
  std::ofstream(go).put('\n');
  opener.join();
  EXPECT_TRUE(hit);
  EXPECT_EQ(compacting.wait(), 0);
}

} // namespace

} // namespace jitcache
