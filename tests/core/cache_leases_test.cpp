// Single flight across processes through the Cache, compile counting that survives SIGKILL, and
// the Cache's handling of faulty stores (a failed write, another request's bytes, a slow tier).
#include <jitcache/cache.hpp>

#include "core/engine/tier_set.hpp"
#include "core/tiers/user/lmdb_store.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/fake_clock.hpp"
#include "tests/support/faulty_user_tier.hpp"
#include "tests/support/samples.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>

namespace jitcache {

using detail::LmdbStore;
namespace {
using test::key_for;

using namespace std::chrono_literals;
using test::ChildProcess;

class CacheLeasesTest : public ::testing::Test {
protected:
  Config config() const { return Config::from_variables({{"JITCACHE_DIR", dir.path().string()}}); }
  std::filesystem::path log_path() const { return dir.path() / "compiles.log"; }

  // A compile that appends one line to the shared log (O_APPEND: whole lines), then does `then`.
  std::function<Expected<Entry>()> logged_compile(
      const std::string& binary, std::function<void()> then = [] {}) const {
    const std::string path = log_path().string();
    return [path, binary, then]() -> Expected<Entry> {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      const std::string line = std::to_string(::getpid()) + "\n";
      if (fd < 0 || ::write(fd, line.data(), line.size()) < 0)
        return Error(ErrorCode::io_error, "log");
      ::close(fd);
      then();
      return Entry{"", binary, {}, 0};
    };
  }
  // A child process whose compile of `source` never ends (until it is killed).
  std::unique_ptr<ChildProcess> stuck_compiler(const std::string& source) {
    auto child = std::make_unique<ChildProcess>([this, source] {
      Cache cache(config());
      // Never returns: the compile pauses until the test kills this process.
      (void)cache.get_or_compile(key_for(source), [] {
        ChildProcess::tell_parent("compiling");
        ::pause();
        return Expected<Entry>(Entry{"", "never", {}, 0});
      });
      return 0;
    });
    EXPECT_EQ(child->next_message(), "compiling");
    return child;
  }
  std::size_t compiles_logged() const {
    std::ifstream in(log_path());
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);)
      ++n;
    return n;
  }
  Stats persisted() const {
    return LmdbStore::open(dir.path() / "v1", true).value()->counters().value();
  }
  test::TempDir dir;
};

TEST_F(CacheLeasesTest, FourProcessesMissingTogetherCompileOnce) {
  // The compile goes on once every other process has paused to wait: for the lease, the only
  // wait there is once the user tier exists.
  { Cache(config()).flush(); }
  int go[2] = {-1, -1};
  ASSERT_EQ(::pipe(go), 0);
  const auto compile = logged_compile("BIN", [&] {
    ChildProcess::tell_parent("compiling");
    char word = 0;
    EXPECT_EQ(::read(go[0], &word, 1), 1);
  });
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (int i = 0; i < 4; ++i)
    children.push_back(std::make_unique<ChildProcess>([&] {
      test::ReportingClock clock([] { ChildProcess::tell_parent("waiting"); });
      Cache cache(config());
      auto got = cache.get_or_compile(key_for("shared"), compile);
      return got && got->entry.payload == "BIN" ? 0 : 1;
    }));
  std::map<std::string, int> said; // each one's first word: "compiling" or "waiting"
  for (auto& child : children)
    ++said[child->next_message().value_or("nothing")];
  EXPECT_EQ(said["compiling"], 1);
  EXPECT_EQ(said["waiting"], 3);
  // One word for each compile: a second compile (the bug this looks for) is counted, not hung.
  ASSERT_EQ(::write(go[1], "gggg", 4), 4);
  for (auto& child : children)
    EXPECT_EQ(child->wait(), 0) << child->err();
  ::close(go[0]);
  ::close(go[1]);
  EXPECT_EQ(compiles_logged(), 1u);
  const Stats stats = persisted();
  EXPECT_EQ(stats.get("opencl", Counter::compiles), 1u);
  EXPECT_EQ(stats.hits("opencl", "user"), 3u) << "the others waited, then read the entry";
}

TEST_F(CacheLeasesTest, AWaiterTakesOverFromAKilledCompilerWhichCountsNothing) {
  auto doomed = stuck_compiler("k");
  ChildProcess waiter([&] {
    test::ReportingClock clock([] { ChildProcess::tell_parent("waiting"); });
    Cache cache(config());
    BuildInfo info;
    auto got = cache.get_or_compile(key_for("k"), logged_compile("FROM WAITER"), &info);
    return got && got->entry.payload == "FROM WAITER" && info.outcome == Outcome::miss ? 0 : 1;
  });
  EXPECT_EQ(waiter.next_message(), "waiting"); // on the lease
  EXPECT_EQ(compiles_logged(), 0u);
  doomed->kill(SIGKILL);
  EXPECT_EQ(waiter.wait(), 0) << waiter.err();
  // Taken over because the holder died, not because its lease (2 minutes) ran out.
  EXPECT_EQ(waiter.err().find("has run past its lease"), std::string::npos) << waiter.err();
  EXPECT_EQ(compiles_logged(), 1u);
  EXPECT_EQ(persisted().get("opencl", Counter::compiles), 1u)
      << "a compile killed before its store is not counted";
}

TEST_F(CacheLeasesTest, MissesOnOtherKeysDoNotWait) {
  auto slow = stuck_compiler("slow");
  test::FakeClock clock;
  Cache cache(config());
  ASSERT_TRUE(cache.get_or_compile(key_for("other"), logged_compile("OTHER")));
  EXPECT_EQ(clock.slept(), 0ns) << "nothing paused to wait";
}

class FaultyTierTest : public ::testing::Test {
protected:
  Config config() const { return Config::from_variables({{"JITCACHE_DIR", dir.path().string()}}); }
  std::shared_ptr<test::FaultyUserTier> faulty() {
    auto user = LmdbStore::open(dir.path() / "v1", false).value();
    m_user = user;
    return std::make_shared<test::FaultyUserTier>(user);
  }
  std::shared_ptr<LmdbStore> m_user;
  test::TempDir dir;
};

std::function<Expected<Entry>()> returns(const std::string& binary) {
  return [binary] { return Expected<Entry>(Entry{"", binary, {}, 0}); };
}

TEST_F(FaultyTierTest, AnIOErrorOnOneWriteStillReturnsTheKernelAndWarnsOnce) {
  auto store = faulty();
  store->fail_number(test::FaultyUserTier::Op::put_counted, 2, ErrorCode::io_error);
  Cache cache(config(), detail::TierSet::of_user(store));
  testing::internal::CaptureStderr();
  for (const char* name : {"a", "b", "c"}) {
    auto got = cache.get_or_compile(key_for(name), returns(name));
    ASSERT_TRUE(got);
    EXPECT_EQ(got->entry.payload, name);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(cache.session_stats().get("opencl", Counter::store_errors), 1u);
  EXPECT_TRUE(m_user->get(key_for("a").digest).value());
  EXPECT_FALSE(m_user->get(key_for("b").digest).value());
  EXPECT_TRUE(m_user->get(key_for("c").digest).value()) << "the tier is not given up on";
  EXPECT_NE(
      err.find("injected failure of call 2 of put_counted; the kernel is still used, but not kept"),
      std::string::npos)
      << err;
}

TEST_F(FaultyTierTest, BytesOfAnotherRequestAreAMissAndAreReplaced) {
  auto store = faulty();
  {
    Cache cache(config(), detail::TierSet::of_user(store));
    ASSERT_TRUE(cache.get_or_compile(key_for("k"), returns("GOOD")));
  }
  store->corrupt_reads(true);
  Cache cache(config(), detail::TierSet::of_user(store));
  BuildInfo info;
  auto got = cache.get_or_compile(key_for("k"), returns("REBUILT"), &info);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->entry.payload, "REBUILT");
  EXPECT_EQ(info.outcome, Outcome::miss);
  EXPECT_EQ(cache.session_stats().get("opencl", Counter::corrupt), 1u);
  store->corrupt_reads(false);
  EXPECT_EQ(m_user->get(key_for("k").digest).value()->payload, "REBUILT");
}

TEST_F(FaultyTierTest, ASlowTierHoldsUpNoOtherKeysDeferredStore) {
  auto store = faulty();
  store->slow(500ms);
  Cache cache(config(), detail::TierSet::of_user(store));
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i)
    cache.store_later(key_for("late " + std::to_string(i)), returns("L" + std::to_string(i)));
  cache.flush();
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 1.5) << "four 0.5 s stores ran one after another";
  EXPECT_EQ(store->writes(), 4);
}

} // namespace
} // namespace jitcache
