// The backend-neutral Cache: tiers, counters, single flight, disable/read-only, failing tiers.
#include <jitcache/cache.hpp>

#include "core/engine/cache_core.hpp"
#include "core/engine/tier_set.hpp"
#include "core/support/clock.hpp"
#include "core/tiers/user/lmdb_store.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/faulty_user_tier.hpp"
#include "tests/support/lmdb_writer.hpp"
#include "tests/support/samples.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <lmdb.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

namespace jitcache {

using detail::LmdbStore;
namespace {
using test::ChildProcess;
using test::key_for;
using test::lmdb_write_transaction;

std::function<Expected<Entry>()> compiler(std::atomic<int>& calls, const std::string& binary,
                                          int sleep_ms = 0) {
  return [&calls, binary, sleep_ms]() -> Expected<Entry> {
    ++calls;
    if (sleep_ms)
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    return Entry{"", binary, {}, 0};
  };
}

class CacheTest : public ::testing::Test {
protected:
  Config config(std::map<std::string, std::string> extra = {}) {
    extra.emplace("JITCACHE_DIR", dir.path().string());
    return Config::from_variables(extra);
  }
  std::uint64_t stored_entries() {
    auto store = LmdbStore::open(dir.path() / "v1", true);
    if (!store)
      return 0;
    std::uint64_t n = 0;
    auto listed = (*store)->for_each([&](const Store::Item&) { ++n; });
    EXPECT_TRUE(listed) << listed.error().message;
    return n;
  }
  test::TempDir dir;
};

TEST_F(CacheTest, MissThenMemoryHitThenUserHitInANewCache) {
  std::atomic<int> calls{0};
  const Key key = key_for("kernel");
  {
    Cache cache(config());
    BuildInfo info;
    auto first = cache.get_or_compile(key, compiler(calls, "BIN"), &info);
    ASSERT_TRUE(first);
    EXPECT_EQ(info.outcome, Outcome::miss);
    EXPECT_EQ(info.tier, "compile");
    EXPECT_EQ(first->entry.payload, "BIN");
    auto second = cache.get_or_compile(key, compiler(calls, "OTHER"), &info);
    ASSERT_TRUE(second);
    EXPECT_EQ(info.outcome, Outcome::hit);
    EXPECT_EQ(info.tier, "memory");
    EXPECT_EQ(second->entry.payload, "BIN");
    const Stats s = cache.session_stats();
    EXPECT_EQ(s.get("opencl", Counter::misses), 1u);
    EXPECT_EQ(s.get("opencl", Counter::compiles), 1u);
    EXPECT_EQ(s.hits("opencl", "memory"), 1u);
  }
  Cache cache(config());
  BuildInfo info;
  auto third = cache.get_or_compile(key, compiler(calls, "OTHER"), &info);
  ASSERT_TRUE(third);
  EXPECT_EQ(info.tier, "user");
  EXPECT_EQ(third->entry.payload, "BIN");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(stored_entries(), 1u);
}

// A process that only hits never waits for LMDB's writer mutex: another process's store holds
// it for as long as its write and its sync take (a large entry, a slow disk), and every process
// starting meanwhile would queue behind it.
TEST_F(CacheTest, AHitDoesNotWaitForAnotherProcesssWriteTransaction) {
  std::atomic<int> calls{0};
  const Key key = key_for("kernel");
  ASSERT_TRUE(Cache(config()).get_or_compile(key, compiler(calls, "BIN")));
  const auto lmdb_dir = dir.path() / "v1";
  // The writer: a write transaction begun through LMDB itself, held until the test ends.
  test::ChildProcess writer([&] {
    ::alarm(60);
    MDB_txn* txn = lmdb_write_transaction(lmdb_dir);
    if (!txn)
      return 2;
    test::ChildProcess::tell_parent("writing");
    for (;;)
      ::pause();
  });
  ASSERT_EQ(writer.next_message(), std::optional<std::string>("writing")) << writer.err();
  // A new process hits, counts its hit and ends; one that waited for the writer ends by SIGALRM.
  test::ChildProcess reader([&] {
    ::alarm(30);
    std::atomic<int> again{0};
    BuildInfo info;
    Cache cache(config());
    auto got = cache.get_or_compile(key, compiler(again, "OTHER"), &info);
    return got && got->entry.payload == "BIN" && info.tier == "user" && again == 0 ? 0 : 1;
  });
  EXPECT_EQ(reader.wait(), 0) << reader.err();
  writer.kill(SIGKILL);
  writer.wait();
  auto stats = LmdbStore::open(dir.path() / "v1", true).value()->counters().value();
  EXPECT_EQ(stats.hits("opencl", "user"), 1u) << "the reader's hit, counted";
}

// A tier an older jitcache wrote, before the records and the tuning databases existed: a
// read-only open reads its entries without them, and a writable open, which finds them missing
// in its read transaction, makes them in a write transaction and keeps every entry.
TEST_F(CacheTest, ATierWithoutTheNewerDatabasesIsReadAndGetsThemOnAWritableOpen) {
  const auto lmdb_dir = dir.path() / "older";
  const Digest kept = Digest::of("kept");
  ChildProcess older([&] { // another process: LMDB allows one environment per file per process
    if (!LmdbStore::open(lmdb_dir, false).value()->put(kept, Entry{"opencl", "BIN"}))
      return 1;
    MDB_txn* txn = lmdb_write_transaction(lmdb_dir);
    if (!txn)
      return 2;
    for (const char* name : {"records", "tuning"}) {
      MDB_dbi dbi = 0;
      if (mdb_dbi_open(txn, name, 0, &dbi) != MDB_SUCCESS || mdb_drop(txn, dbi, 1) != MDB_SUCCESS)
        return 3;
    }
    return mdb_txn_commit(txn) == MDB_SUCCESS ? 0 : 4;
  });
  ASSERT_EQ(older.wait(), 0) << older.err();
  const auto has_entry = [&](LmdbStore& store) {
    return store.visit(kept, [](const EntryView& view) { EXPECT_EQ(view.payload, "BIN"); }).value();
  };
  {
    auto reader = LmdbStore::open(lmdb_dir, true);
    ASSERT_TRUE(reader) << reader.error().message;
    EXPECT_TRUE(has_entry(**reader));
    EXPECT_FALSE((*reader)->visit_record(kept, [](std::string_view) {}).value());
  }
  auto writer = LmdbStore::open(lmdb_dir, false);
  ASSERT_TRUE(writer) << writer.error().message;
  EXPECT_TRUE(has_entry(**writer));
  ASSERT_TRUE((*writer)->put_records({{kept, "record"}}));
  EXPECT_TRUE((*writer)->visit_record(kept, [](std::string_view) {}).value());
}

TEST_F(CacheTest, CountersPersistInTheUserTier) {
  std::atomic<int> calls{0};
  for (int run = 0; run < 2; ++run) {
    Cache cache(config());
    ASSERT_TRUE(cache.get_or_compile(key_for("k"), compiler(calls, "B")));
  }
  auto stats = LmdbStore::open(dir.path() / "v1", true).value()->counters().value();
  EXPECT_EQ(stats.get("opencl", Counter::compiles), 1u);
  EXPECT_EQ(stats.get("opencl", Counter::misses), 1u);
  EXPECT_EQ(stats.hits("opencl", "user"), 1u);
  EXPECT_EQ(stats.get("opencl", Counter::bytes_stored), 1u);
}

TEST_F(CacheTest, EightThreadsOneCompile) {
  Cache cache(config());
  std::atomic<int> calls{0};
  const Key key = key_for("same kernel");
  std::vector<std::thread> threads;
  std::vector<std::string> results(8);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      auto r = cache.get_or_compile(key, compiler(calls, "ONE", 200));
      results[i] = r ? r->entry.payload : "error";
    });
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(calls, 1);
  for (const auto& r : results)
    EXPECT_EQ(r, "ONE");
  const Stats s = cache.session_stats();
  EXPECT_EQ(s.get("opencl", Counter::compiles), 1u);
  EXPECT_EQ(s.get("opencl", Counter::misses), 1u);
  EXPECT_EQ(s.hits("opencl"), 7u);
}

TEST_F(CacheTest, CompileErrorStoresNothing) {
  Cache cache(config());
  auto r = cache.get_or_compile(key_for("bad"), []() -> Expected<Entry> {
    return Error(ErrorCode::compile_failed, "compile failed", "line 1: error");
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::compile_failed);
  EXPECT_EQ(r.error().log, "line 1: error");
  EXPECT_FALSE(cache.lookup(key_for("bad")));
  EXPECT_EQ(cache.session_stats().get("opencl", Counter::compile_errors), 1u);
  cache.flush();
  EXPECT_EQ(stored_entries(), 0u);
}

TEST_F(CacheTest, DisableKeepsNothingOnDiskButMemoryWorks) {
  std::atomic<int> calls{0};
  {
    Cache cache(config({{"JITCACHE_DISABLE", "1"}}));
    ASSERT_TRUE(cache.get_or_compile(key_for("k"), compiler(calls, "B")));
    BuildInfo info;
    ASSERT_TRUE(cache.get_or_compile(key_for("k"), compiler(calls, "B"), &info));
    EXPECT_EQ(info.tier, "memory");
  }
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "v1"));
}

TEST_F(CacheTest, DisableOneBackendOnly) {
  std::atomic<int> calls{0};
  {
    Cache cache(config({{"JITCACHE_DISABLE", "cuda"}}));
    ASSERT_TRUE(cache.get_or_compile(key_for("a", "cuda"), compiler(calls, "C")));
    ASSERT_TRUE(cache.get_or_compile(key_for("a", "opencl"), compiler(calls, "O")));
  }
  EXPECT_EQ(stored_entries(), 1u);
}

TEST_F(CacheTest, ReadOnlyReadsButNeverWrites) {
  std::atomic<int> calls{0};
  {
    Cache cache(config());
    ASSERT_TRUE(cache.get_or_compile(key_for("old"), compiler(calls, "OLD")));
  }
  Cache cache(config({{"JITCACHE_READONLY", "1"}}));
  BuildInfo info;
  ASSERT_TRUE(cache.get_or_compile(key_for("old"), compiler(calls, "X"), &info));
  EXPECT_EQ(info.tier, "user");
  ASSERT_TRUE(cache.get_or_compile(key_for("new"), compiler(calls, "NEW"), &info));
  EXPECT_EQ(info.outcome, Outcome::miss);
  cache.flush();
  EXPECT_EQ(stored_entries(), 1u);
  EXPECT_EQ(calls, 2);
}

TEST_F(CacheTest, AFailingWriteStillReturnsTheCompiledEntry) {
  auto user = LmdbStore::open(dir.path() / "v1", false).value();
  auto faulty = std::make_shared<test::FaultyUserTier>(user);
  faulty->fail_from(test::FaultyUserTier::Op::put, 1, ErrorCode::store_full);
  faulty->fail_from(test::FaultyUserTier::Op::put_counted, 1, ErrorCode::store_full);
  Cache cache(config(), detail::TierSet::of_user(faulty));
  std::atomic<int> calls{0};
  auto r = cache.get_or_compile(key_for("k"), compiler(calls, "B"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->entry.payload, "B");
  EXPECT_EQ(faulty->writes(), 1);
  EXPECT_EQ(cache.session_stats().get("opencl", Counter::store_errors), 1u);
  EXPECT_FALSE(user->get(key_for("k").digest).value());
}

TEST_F(CacheTest, AFailingTierIsSkippedForTheRestOfTheProcess) {
  auto user = LmdbStore::open(dir.path() / "v1", false).value();
  auto faulty = std::make_shared<test::FaultyUserTier>(user);
  faulty->fail_from(test::FaultyUserTier::Op::get, 1);
  faulty->fail_from(test::FaultyUserTier::Op::visit, 1);
  Cache cache(config(), detail::TierSet::of_user(faulty));
  std::atomic<int> calls{0};
  ASSERT_TRUE(cache.get_or_compile(key_for("a"), compiler(calls, "A")));
  ASSERT_TRUE(cache.get_or_compile(key_for("b"), compiler(calls, "B")));
  EXPECT_EQ(faulty->reads(), 1) << "a dead tier must not be asked again";
  EXPECT_EQ(calls, 2);
}

// A tier that, while a request asks it, lets the user tier find damage in another key: what
// another thread's lookup does at that moment (a race no test can time; this double makes it
// happen during the step).
class DamageElsewhere : public Store {
public:
  DamageElsewhere(std::shared_ptr<Store> user, Digest damaged)
      : m_user(std::move(user)), m_damaged(damaged) {}
  std::string name() const override { return "elsewhere"; }
  bool writable() const override { return false; }
  Expected<std::optional<Entry>> get(const Digest&) override { return std::optional<Entry>(); }
  Expected<Visit> visit(const Digest&, const std::function<void(const EntryView&)>&) override {
    auto other = m_user->visit(m_damaged, [](const EntryView&) {});
    if (other && other->outcome == Visit::Outcome::damaged)
      ++found_damage;
    return Visit::miss();
  }
  Expected<void> put(const Digest&, const Entry&) override {
    return Error(ErrorCode::read_only, "read-only");
  }
  Expected<bool> remove(const Digest&) override { return Error(ErrorCode::read_only, "read-only"); }
  Expected<void> for_each(const std::function<void(const Item&)>&) override { return {}; }

  int found_damage = 0; ///< times the user tier reported damage during a step of the walk

private:
  std::shared_ptr<Store> m_user;
  Digest m_damaged;
};

TEST_F(CacheTest, DamageAnotherLookupFindsIsNotCountedForThisOne) {
  const Key damaged = key_for("damaged");
  const std::string marker = "UNIQUE-MARKER-PAYLOAD-damaged-0123456789";
  auto user = LmdbStore::open(dir.path() / "v1", false).value();
  ASSERT_TRUE(user->put(damaged.digest, Entry{"opencl", marker, {}, 0}));
  {
    std::fstream io(dir.path() / "v1" / "data.mdb",
                    std::ios::in | std::ios::out | std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(io)), {});
    const auto at = data.find(marker);
    ASSERT_NE(at, std::string::npos);
    io.seekp(static_cast<std::streamoff>(at + 5));
    io.put('#');
  }
  auto elsewhere = std::make_shared<DamageElsewhere>(user, damaged.digest);
  detail::TierSet tiers;
  tiers.add(elsewhere).add_user(user);
  Cache cache(config(), std::move(tiers));
  std::atomic<int> calls{0};
  testing::internal::CaptureStderr();
  ASSERT_TRUE(cache.get_or_compile(key_for("clean"), compiler(calls, "B")));
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(elsewhere->found_damage, 1);
  EXPECT_EQ(cache.session_stats().get("opencl", Counter::corrupt), 0u)
      << "this request found no damage";
}

TEST_F(CacheTest, ACacheDirThatIsAFileFallsBackToCompiling) {
  std::ofstream(dir.path() / "file") << "x";
  Cache cache(Config::from_variables({{"JITCACHE_DIR", (dir.path() / "file").string()}}));
  std::atomic<int> calls{0};
  auto r = cache.get_or_compile(key_for("k"), compiler(calls, "B"));
  ASSERT_TRUE(r);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(std::filesystem::is_regular_file(dir.path() / "file"));
}

TEST_F(CacheTest, StoreLaterFinishesByFlush) {
  Cache cache(config());
  const Key key = key_for("later");
  cache.store_later(key, []() -> Expected<Entry> {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return Entry{"opencl", "LATE", {}, 0};
  });
  cache.flush();
  EXPECT_EQ(stored_entries(), 1u);
}

} // namespace
} // namespace jitcache

namespace jitcache {
namespace {

// Time saved is what the application would have paid: the compile, and the work of producing
// the entry afterwards (reading a PoCL binary compiles every kernel of the program, which the
// application's first launches pay without a hit), not the compile alone.
TEST_F(CacheTest, AHitSavesTheCompileAndTheEntrysLaterProduction) {
  const Key key = key_for("compiled, then produced later");
  std::uint64_t later_ns = 0;
  {
    Cache cache(config());
    auto& core = detail::core_of(cache);
    const detail::EntryReceiver use = [](const EntryView&) -> Expected<void> { return {}; };
    const detail::Compiler compile = [&]() -> Expected<detail::Compiled> {
      detail::Compiled compiled;
      compiled.later = [&]() -> Expected<Entry> {
        const detail::Stopwatch clock;
        std::this_thread::sleep_for(std::chrono::milliseconds(20)); // the kernels' compile
        later_ns = clock.ns();
        return Entry{"opencl", "BINARY"};
      };
      return compiled;
    };
    BuildInfo info;
    detail::CacheCore::Refusals refusals;
    ASSERT_TRUE(core.obtain(key, compile, use, info, detail::CacheCore::Memory::skip, refusals));
    EXPECT_EQ(info.outcome, Outcome::miss);
    cache.flush();
  }
  ASSERT_GT(later_ns, 0u);
  Cache again(config());
  std::atomic<int> calls{0};
  BuildInfo info;
  ASSERT_TRUE(again.get_or_compile(key, compiler(calls, "OTHER"), &info));
  EXPECT_EQ(info.outcome, Outcome::hit);
  EXPECT_GE(again.session_stats().get("opencl", Counter::saved_ns), later_ns);
}

// A request whose speculative step (serve) refused a read-only tier's entry, then took the usual
// path (obtain) for the same key: the bad entry is rejected, and warned about, once.
TEST_F(CacheTest, AnEntryRefusedWhileServingIsNotRefusedAgainByObtain) {
  const Key key = key_for("k");
  {
    Cache writer(config());
    writer.store(key, Entry{"opencl", "BAD"});
  }
  Cache cache(
      Config::from_variables({{"JITCACHE_DIR", dir.path().string()}, {"JITCACHE_READONLY", "1"}}));
  auto& core = detail::core_of(cache);
  std::string used;
  const detail::EntryReceiver use = [&](const EntryView& entry) -> Expected<void> {
    if (entry.payload == "BAD")
      return Error(ErrorCode::load_failed, "the runtime refused it");
    used = std::string(entry.payload);
    return {};
  };
  const detail::Compiler compile = []() -> Expected<detail::Compiled> {
    return detail::Compiled{Entry{"opencl", "GOOD"}, {}, {}, {}};
  };
  testing::internal::CaptureStderr();
  BuildInfo info;
  detail::CacheCore::Refusals refusals;
  auto served = core.serve(key, use, info, refusals);
  ASSERT_TRUE(served);
  EXPECT_FALSE(*served);
  ASSERT_TRUE(core.obtain(key, compile, use, info, detail::CacheCore::Memory::skip, refusals));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(used, "GOOD");
  EXPECT_EQ(info.outcome, Outcome::miss);
  const Stats stats = cache.session_stats();
  EXPECT_EQ(stats.get("opencl", Counter::rejected), 1u);
  EXPECT_EQ(stats.get("opencl", Counter::misses), 1u);
  EXPECT_EQ(stats.get("opencl", Counter::compiles), 1u);
  std::size_t warnings = 0;
  for (auto at = err.find("jitcache: warn"); at != std::string::npos;
       at = err.find("jitcache: warn", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << err;
}

} // namespace
} // namespace jitcache
