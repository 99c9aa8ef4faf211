// The use log (core/tiers/user/use_log.hpp): what a process that wrote nothing else tells the
// user tier (its counters, the uses of the entries it hit), appended instead of a write
// transaction and folded in by the next write. Damage loses only the records it touches;
// appends, folds and zeroes of many processes at once lose and repeat nothing; a hit-only
// process leaves the data file as it was.
#include "core/tiers/user/lmdb_store.hpp"
#include "core/tiers/user/use_log.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/files.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <memory>
#include <random>
#include <vector>

namespace jitcache {

using detail::AccessLog;
using detail::CacheDir;
using detail::decode_use_log;
using detail::encode_use_record;
using detail::LmdbStore;
using detail::UseNews;

namespace {

namespace fs = std::filesystem;
using test::ChildProcess;
using test::read_file;
using test::write_file;

// News with up to 3 counters and 4 uses, drawn by `rng` (keys from a small set, so that records
// share some).
UseNews random_news(std::mt19937& rng) {
  UseNews news;
  const char* backends[] = {"opencl", "nvrtc", "all"};
  const char* names[] = {"hits.user", "misses", "compiles", "saved_ns"};
  for (unsigned i = rng() % 4; i > 0; --i)
    news.counters.by_backend[backends[rng() % 3]][names[rng() % 4]] += 1 + rng() % 1000;
  for (unsigned i = rng() % 5; i > 0; --i)
    news.uses.emplace_back(Digest::of(std::to_string(rng() % 6)),
                           AccessLog::Use{1 + rng() % 100000, 1 + rng() % 50});
  return news;
}

// The sum of `all`, as the log adds them up: counters added, each key's latest time and its hits
// added.
UseNews sum_of(const std::vector<UseNews>& all) {
  UseNews sum;
  AccessLog uses;
  for (const UseNews& news : all) {
    sum.counters.merge(news.counters);
    uses.restore(news.uses);
  }
  sum.uses = uses.take();
  return sum;
}

std::map<Digest, AccessLog::Use> by_key(const AccessLog::Batch& uses) {
  std::map<Digest, AccessLog::Use> out;
  for (const auto& [key, use] : uses)
    out[key] = use;
  return out;
}

void expect_same(const UseNews& got, const UseNews& want, const std::string& what) {
  EXPECT_EQ(got.counters.by_backend, want.counters.by_backend) << what;
  const auto got_uses = by_key(got.uses), want_uses = by_key(want.uses);
  ASSERT_EQ(got_uses.size(), want_uses.size()) << what;
  for (const auto& [key, use] : want_uses) {
    ASSERT_TRUE(got_uses.count(key)) << what;
    EXPECT_EQ(got_uses.at(key).when_us, use.when_us) << what;
    EXPECT_EQ(got_uses.at(key).hits, use.hits) << what;
  }
}

TEST(UseLog, RecordsReadBackAsTheSumOfTheirNews) {
  std::mt19937 rng(7);
  std::vector<UseNews> all;
  std::string log;
  for (int i = 0; i < 20; ++i) {
    all.push_back(random_news(rng));
    log += encode_use_record(all.back());
  }
  expect_same(decode_use_log(log), sum_of(all), "20 records");
  expect_same(decode_use_log(""), UseNews{}, "no log");
  EXPECT_TRUE(decode_use_log(encode_use_record(UseNews{})).empty());
}

// Damage anywhere - bytes changed over a random range, the log cut short, garbage put between
// records - loses exactly the records whose bytes it changed; every other one still counts, and
// nothing counts that was not written.
TEST(UseLog, DamageLosesOnlyTheRecordsItTouches) {
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<UseNews> all;
    std::vector<std::pair<std::size_t, std::size_t>> spans; // each record's [begin, end)
    std::string log;
    for (unsigned i = 1 + rng() % 8; i > 0; --i) {
      all.push_back(random_news(rng));
      const std::string record = encode_use_record(all.back());
      spans.emplace_back(log.size(), log.size() + record.size());
      log += record;
    }
    std::string bad = log;
    const int kind = trial % 4;
    if (kind == 0 || kind == 1) { // random bytes, or one byte, over a random range
      const std::size_t at = rng() % bad.size();
      const std::size_t length = kind == 0 ? 1 + rng() % 64 : 1;
      for (std::size_t i = at; i < std::min(bad.size(), at + length); ++i)
        bad[i] = static_cast<char>(rng());
    } else if (kind == 2) { // cut short (a full disk, a killed process)
      bad.resize(rng() % bad.size());
    }
    std::vector<UseNews> kept;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const auto [begin, end] = spans[i];
      if (end <= bad.size() && bad.compare(begin, end - begin, log, begin, end - begin) == 0)
        kept.push_back(all[i]);
    }
    if (kind == 3) { // garbage, and a record's start alone, between two records
      const std::size_t at = spans[rng() % spans.size()].first;
      std::string garbage(rng() % 40, '\0');
      for (char& c : garbage)
        c = static_cast<char>(rng());
      bad.insert(at, garbage + std::string("JCU1\x10\0\0\0", 8));
      kept = all;
    }
    expect_same(decode_use_log(bad), sum_of(kept), "trial " + std::to_string(trial));
    if (HasFailure())
      return;
  }
}

class UseLogStore : public ::testing::Test {
protected:
  fs::path tier() const { return dir.path() / "tier"; }
  std::shared_ptr<LmdbStore> open() { return LmdbStore::open(tier(), false).value(); }
  fs::path log() const { return tier() / detail::k_use_log_name; }
  static Stats one(const std::string& name, std::uint64_t amount = 1) {
    Stats stats;
    stats.by_backend["opencl"][name] = amount;
    return stats;
  }
  std::uint64_t counted(const std::string& name) {
    return open()->counters().value().by_backend["opencl"][name];
  }
  // A child process that opens the tier, hits `key` `hits` times and adds 1 to "told", as a
  // process that only hits does at exit.
  int hit_only_process(const Digest& key, int hits) {
    ChildProcess child([&] {
      auto store = open();
      for (int i = 0; i < hits; ++i)
        if (!store->visit(key, [](const EntryView&) {}).value())
          return 1;
      return store->add_counters(one("told")) ? 0 : 2;
    });
    return child.wait();
  }
  test::TempDir dir;
};

const Digest k_key = Digest::of("an entry");

TEST_F(UseLogStore, AProcessThatOnlyHitsLeavesTheDataFileAsItWasAndIsCounted) {
  ASSERT_TRUE(open()->put(k_key, Entry{"opencl", "binary"}));
  const std::string before = read_file(tier() / "data.mdb");
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(hit_only_process(k_key, 2), 0);
  EXPECT_EQ(read_file(tier() / "data.mdb"), before) << "no write transaction";
  EXPECT_TRUE(fs::exists(log()));
  EXPECT_EQ(counted("told"), 3u) << "the log's counters are counted";
  EXPECT_EQ(open()->entry_use(k_key).value().hits, 6u) << "and its hits";
  const auto listed = open()->entry_uses({Digest::of("absent"), k_key}).value();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].hits, std::nullopt) << "nothing told of an absent entry";
  EXPECT_EQ(listed[1].hits, 6u) << "a listing reads the log once for all its entries";

  ASSERT_TRUE(open()->put(Digest::of("another"), Entry{"opencl", "binary"}));
  EXPECT_FALSE(fs::exists(log())) << "the next write folds the log in and removes it";
  EXPECT_EQ(counted("told"), 3u) << "counted once: in LMDB now, not also in the log";
  EXPECT_EQ(open()->entry_use(k_key).value().hits, 6u);
}

// 8 processes at once each tell 40 batches while 2 others write entries (each write folding the
// log in); then 30 processes one after another. Nothing is lost or counted twice.
TEST_F(UseLogStore, ManyProcessesTellingAndFoldingAtOnceLoseAndRepeatNothing) {
  ASSERT_TRUE(open()->put(k_key, Entry{"opencl", "binary"}));
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (int p = 0; p < 8; ++p)
    children.push_back(std::make_unique<ChildProcess>([&] {
      auto store = open();
      for (int i = 0; i < 40; ++i) {
        if (!store->visit(k_key, [](const EntryView&) {}).value())
          return 1;
        if (!store->add_counters(one("told")))
          return 2;
      }
      return 0;
    }));
  for (int p = 0; p < 2; ++p)
    children.push_back(std::make_unique<ChildProcess>([&, p] {
      auto store = open();
      for (int i = 0; i < 20; ++i)
        if (!store->put(Digest::of("w" + std::to_string(p) + "-" + std::to_string(i)),
                        Entry{"opencl", "binary"}))
          return 3;
      return 0;
    }));
  for (auto& child : children)
    ASSERT_EQ(child->wait(), 0) << child->err();
  EXPECT_EQ(counted("told"), 8u * 40u);
  EXPECT_EQ(open()->entry_use(k_key).value().hits, 8u * 40u);

  for (int p = 0; p < 30; ++p)
    ASSERT_EQ(hit_only_process(k_key, 1), 0);
  EXPECT_EQ(counted("told"), 8u * 40u + 30u);
  EXPECT_EQ(open()->entry_use(k_key).value().hits, 8u * 40u + 30u);
}

// Zeroing while other processes tell the tier (appends) and write to it (folds): a zero takes
// every count told before it began and none told after it ended, and no count is taken twice.
// So the count left at the end lies between the tells that began after the last zero ended and
// those that ended after it began. A zero refused because the log was held past the fold's wait
// (rare here; ZeroingOrClearingWhileAnAppendHoldsTheLog... makes it happen) is tried again.
TEST_F(UseLogStore, ZeroingWhileOthersTellAndFoldTakesEachCountOnceOrNotAtAll) {
  ASSERT_TRUE(open()->put(k_key, Entry{"opencl", "binary"}));
  const auto now_ns = [] {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return std::int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
  };
  constexpr int k_tellers = 4, k_tells = 60;
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (int p = 0; p < k_tellers; ++p)
    children.push_back(std::make_unique<ChildProcess>([&, p] {
      auto store = open();
      std::ofstream times(dir.path() / ("tells." + std::to_string(p)));
      std::mt19937 pause(p);
      for (int i = 0; i < k_tells; ++i) {
        ::usleep(pause() % 500); // the tells spread over the zeros
        const std::int64_t began = now_ns();
        if (!store->add_counters(one("told")))
          return 2;
        times << began << ' ' << now_ns() << '\n';
      }
      return times.flush() ? 0 : 3;
    }));
  children.push_back(std::make_unique<ChildProcess>([&] { // folds the log now and then
    auto store = open();
    for (int i = 0; i < 15; ++i)
      if (!store->put(Digest::of("w" + std::to_string(i)), Entry{"opencl", "binary"}))
        return 4;
    return 0;
  }));
  std::int64_t zero_began = 0, zero_ended = 0;
  std::mt19937 rng(7);
  for (int zeros = 0; zeros < 4;) {
    ::usleep(rng() % 8000);
    const std::int64_t began = now_ns();
    const auto zeroed = open()->zero_counters();
    if (!zeroed) {
      ASSERT_NE(zeroed.error().message.find("held by another process"), std::string::npos)
          << zeroed.error().message;
      continue;
    }
    zero_began = began;
    zero_ended = now_ns();
    ++zeros;
  }
  for (auto& child : children)
    ASSERT_EQ(child->wait(), 0) << child->err();
  std::uint64_t after = 0, not_before = 0, tells = 0;
  for (int p = 0; p < k_tellers; ++p) {
    std::ifstream times(dir.path() / ("tells." + std::to_string(p)));
    for (std::int64_t began, ended; times >> began >> ended; ++tells) {
      after += began > zero_ended;
      not_before += ended > zero_began;
    }
  }
  ASSERT_EQ(tells, std::uint64_t(k_tellers * k_tells));
  const std::uint64_t left = counted("told");
  EXPECT_GE(left, after);
  EXPECT_LE(left, not_before);
}

// A log that grows to k_use_log_fold_at is folded by the process whose append reached it: the
// log stays bounded with no other writer.
TEST_F(UseLogStore, ALogThatGrowsLargeIsFoldedByItsAppender) {
  auto store = open();
  ASSERT_TRUE(store->put(k_key, Entry{"opencl", "binary"}));
  Stats many; // about 2 KB a record
  for (int c = 0; c < 100; ++c)
    many.by_backend["opencl"]["c" + std::to_string(c)] = 1;
  std::uint64_t largest = 0;
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(store->add_counters(many));
    if (fs::exists(log()))
      largest = std::max<std::uint64_t>(largest, fs::file_size(log()));
  }
  EXPECT_GT(largest, detail::k_use_log_fold_at / 2);
  EXPECT_LT(largest, detail::k_use_log_fold_at + 4096);
  EXPECT_EQ(counted("c0"), 300u);
  EXPECT_EQ(counted("c99"), 300u);
}

// A log that is not a regular file (a FIFO, a symbolic link) is not written through: the news go
// in a write transaction instead, and what the link points to is untouched.
TEST_F(UseLogStore, ALogThatIsNotAFileIsNotUsedAndTheNewsStillLand) {
  ASSERT_TRUE(open()->put(k_key, Entry{"opencl", "binary"}));
  ASSERT_EQ(::mkfifo(log().c_str(), 0600), 0);
  EXPECT_TRUE(open()->add_counters(one("told")));
  EXPECT_EQ(counted("told"), 1u);
  // Nor does it hold up a zero: it has no counters to take (it is not one held by an append).
  const auto zeroed = open()->zero_counters();
  EXPECT_TRUE(zeroed) << zeroed.error().message;
  EXPECT_EQ(counted("told"), 0u);
  EXPECT_TRUE(open()->add_counters(one("told")));
  fs::remove(log());
  const fs::path elsewhere = dir.path() / "elsewhere";
  write_file(elsewhere, "theirs");
  fs::create_symlink(elsewhere, log());
  EXPECT_TRUE(open()->add_counters(one("told")));
  EXPECT_EQ(counted("told"), 2u);
  const auto cleared = open()->clear();
  EXPECT_TRUE(cleared) << cleared.error().message;
  EXPECT_EQ(counted("told"), 0u);
  EXPECT_EQ(read_file(elsewhere), "theirs");
  EXPECT_TRUE(fs::is_symlink(log()));
}

// A process stopped while it holds the log (mid-append) holds up no write: the write goes on
// without folding, and the log is folded by a later write once it is let go.
TEST_F(UseLogStore, AnAppendStoppedMidWayHoldsUpNoWrite) {
  ASSERT_TRUE(open()->put(k_key, Entry{"opencl", "binary"}));
  ASSERT_TRUE(open()->add_counters(one("told")));
  const int held = ::open(log().c_str(), O_RDONLY);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_SH), 0);
  ASSERT_TRUE(open()->put(Digest::of("while held"), Entry{"opencl", "binary"}));
  EXPECT_TRUE(fs::exists(log())) << "not folded while an append holds it";
  EXPECT_EQ(counted("told"), 1u);
  ::close(held);
  ASSERT_TRUE(open()->put(Digest::of("after"), Entry{"opencl", "binary"}));
  EXPECT_FALSE(fs::exists(log()));
  EXPECT_EQ(counted("told"), 1u);
}

// A disk that fills while processes tell the tier (a 1 MB tmpfs, then one page left free): an
// append cut short is skipped, every add_counters that succeeded is counted once the disk has
// room again, and none that failed is.
TEST_F(UseLogStore, ADiskThatFillsMidAppendLosesOnlyWhatItReported) {
  constexpr int k_skip = 77;
  ChildProcess child([&] {
    const fs::path small = dir.path() / "small";
    fs::create_directory(small);
    if (!test::private_mounts() ||
        ::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=1m,mode=0700") != 0)
      return k_skip;
    auto store = LmdbStore::open(small / "tier", false).value();
    if (!store->put(k_key, Entry{"opencl", "binary"}))
      return 1;
    const fs::path filler = small / "filler";
    {
      std::ofstream out(filler, std::ios::binary);
      const std::string block(4096, 'f');
      while (out.write(block.data(), block.size()))
        out.flush();
    }
    fs::resize_file(filler, fs::file_size(filler) - 4096); // one page free: a record is cut
    Stats news;                                            // about 400 bytes a record
    for (int c = 0; c < 12; ++c)
      news.by_backend["opencl"]["counter" + std::to_string(c)] = 1;
    int told = 0;
    for (int i = 0; i < 30; ++i)
      told += store->add_counters(news) ? 1 : 0;
    if (told == 0 || told == 30)
      return 2; // the disk did not fill mid-way: the test proves nothing
    fs::remove(filler);
    if (!store->put(Digest::of("after"), Entry{"opencl", "binary"}))
      return 3;
    const Stats counted = store->counters().value();
    for (int c = 0; c < 12; ++c)
      if (counted.by_backend.at("opencl").at("counter" + std::to_string(c)) != std::uint64_t(told))
        return 4;
    return fs::exists(small / "tier" / detail::k_use_log_name) ? 5 : 0;
  });
  const int status = child.wait();
  if (status == k_skip)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN)";
  EXPECT_EQ(status, 0) << child.err();
}

TEST_F(UseLogStore, ZeroingAndClearingTakeTheLogsCountersToo) {
  ASSERT_TRUE(open()->put(k_key, Entry{"opencl", "binary"}));
  ASSERT_TRUE(open()->add_counters(one("told", 5)));
  ASSERT_TRUE(open()->zero_counters());
  EXPECT_EQ(counted("told"), 0u);
  ASSERT_TRUE(open()->add_counters(one("told", 5)));
  ASSERT_TRUE(open()->clear());
  EXPECT_EQ(counted("told"), 0u);
  EXPECT_FALSE(fs::exists(log()));
}

// A log held past the fold's wait (an append stopped mid-way) cannot be taken, and zeroing or
// clearing without it would leave its counters to come back at the next fold: both fail, saying
// why, and change nothing; once the log is free, both take its counters too.
TEST_F(UseLogStore, ZeroingOrClearingWhileAnAppendHoldsTheLogFailsAndChangesNothing) {
  ASSERT_TRUE(open()->put(k_key, Entry{"opencl", "binary"}));
  ASSERT_TRUE(open()->add_counters(one("told", 5)));
  ASSERT_TRUE(fs::exists(log()));
  const int held = ::open(log().c_str(), O_RDONLY);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_SH), 0);
  const auto zeroed = open()->zero_counters();
  const auto cleared = open()->clear();
  ::close(held);
  for (const auto* changed : {&zeroed, &cleared}) {
    ASSERT_FALSE(*changed);
    EXPECT_EQ(changed->error().code, ErrorCode::io_error);
    EXPECT_NE(changed->error().message.find("held by another process"), std::string::npos)
        << changed->error().message;
  }
  EXPECT_EQ(counted("told"), 5u);
  EXPECT_TRUE(open()->visit(k_key, [](const EntryView&) {}).value()) << "the entry is kept";
  ASSERT_TRUE(open()->zero_counters());
  EXPECT_EQ(counted("told"), 0u);
  ASSERT_TRUE(open()->add_counters(one("told", 3)));
  ASSERT_TRUE(open()->clear());
  EXPECT_EQ(counted("told"), 0u);
  EXPECT_FALSE(open()->visit(k_key, [](const EntryView&) {}).value());
  EXPECT_FALSE(fs::exists(log()));
}

// A user tier whose runs packages served has a log and no data file. Its counters are read and
// dropped from the log alone only while it has none: from the moment a process has made the
// data file (and may have folded the log into it), readers and droppers are sent to the tier,
// which is decided with the log held, so that no fold can come between.
TEST_F(UseLogStore, ALoneLogIsReadAndDroppedOnlyWhileTheTierHasNoDataFile) {
  fs::create_directories(tier());
  ASSERT_EQ(::chmod(tier().c_str(), 0700), 0);
  const auto tell = [&](std::uint64_t amount) {
    ASSERT_TRUE(
        detail::append_use_log(CacheDir::open(tier()).value(), UseNews{one("told", amount), {}}));
  };
  EXPECT_EQ(detail::drop_logged_counters(tier()).value(), detail::LoggedDrop::nothing);
  tell(3);
  tell(4);
  EXPECT_EQ(detail::logged_counters(tier()).value().by_backend["opencl"]["told"], 7u);
  EXPECT_EQ(detail::drop_logged_counters(tier()).value(), detail::LoggedDrop::dropped);
  EXPECT_FALSE(fs::exists(log()));
  EXPECT_TRUE(detail::logged_counters(tier()).value().by_backend.empty());

  tell(5);
  ASSERT_TRUE(open()); // another process makes the tier's data file (no write: nothing folded)
  ASSERT_TRUE(detail::has_data_file(tier()));
  EXPECT_EQ(detail::logged_counters(tier()), std::nullopt) << "read the tier instead";
  EXPECT_EQ(detail::drop_logged_counters(tier()).value(), detail::LoggedDrop::tier);
  EXPECT_TRUE(fs::exists(log())) << "a log of a tier with a data file is the tier's to fold";
  EXPECT_EQ(counted("told"), 5u);
  ASSERT_TRUE(fs::remove(log()));
  EXPECT_EQ(detail::logged_counters(tier()), std::nullopt) << "and without a log";
  EXPECT_EQ(detail::drop_logged_counters(tier()).value(), detail::LoggedDrop::tier);
}

// Counters that cannot be dropped are said not to be: a log held by an append stopped mid-way,
// a folder mounted read-only. The log and its counters stay.
TEST_F(UseLogStore, ALoneLogThatCannotBeDroppedIsAnErrorAndKeepsItsCounters) {
  fs::create_directories(tier());
  ASSERT_EQ(::chmod(tier().c_str(), 0700), 0);
  ASSERT_TRUE(detail::append_use_log(CacheDir::open(tier()).value(), UseNews{one("told", 2), {}}));
  {
    const int held = ::open(log().c_str(), O_RDONLY);
    ASSERT_GE(held, 0);
    ASSERT_EQ(::flock(held, LOCK_SH), 0);
    const auto dropped = detail::drop_logged_counters(tier());
    ::close(held);
    ASSERT_FALSE(dropped);
    EXPECT_EQ(dropped.error().code, ErrorCode::io_error);
    EXPECT_NE(dropped.error().message.find("held by another process"), std::string::npos)
        << dropped.error().message;
  }
  EXPECT_EQ(detail::logged_counters(tier()).value().by_backend["opencl"]["told"], 2u);

  constexpr int k_skip = 77;
  ChildProcess child([&] {
    if (!test::private_mounts() ||
        ::mount(tier().c_str(), tier().c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, tier().c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0)
      return k_skip;
    const auto dropped = detail::drop_logged_counters(tier());
    if (dropped || dropped.error().code != ErrorCode::io_error)
      return 1;
    if (dropped.error().message.find("Read-only file system") == std::string::npos)
      return 2;
    return detail::logged_counters(tier()).value().by_backend["opencl"]["told"] == 2u ? 0 : 3;
  });
  const int status = child.wait();
  if (status == k_skip)
    GTEST_SKIP() << "cannot bind-mount a folder read-only here (needs CAP_SYS_ADMIN)";
  EXPECT_EQ(status, 0) << child.err();
  EXPECT_TRUE(fs::exists(log()));
}

} // namespace
} // namespace jitcache
