// LRU eviction under a size limit: the choice of victims, and the user tier that applies it
// without a write per hit.
#include "core/tiers/user/eviction.hpp"
#include "core/tiers/user/lmdb_store.hpp"

#include "tests/support/samples.hpp"
#include "tests/support/temp_dir.hpp"

#include <jitcache/cache.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <iostream>

namespace jitcache {

using detail::choose_victims;
using detail::EvictionCandidate;
using detail::file_bound;
using detail::LmdbStore;
namespace {
using test::numbered_entry;
using test::numbered_key;

TEST(ChooseVictims, LeastRecentlyUsedFirstUntilUnderTheTarget) {
  std::vector<EvictionCandidate> all = {{numbered_key(0), 100, 30},
                                        {numbered_key(1), 100, 10},
                                        {numbered_key(2), 100, 20},
                                        {numbered_key(3), 100, 40}};
  auto victims = choose_victims(all, 400, 200, std::nullopt);
  ASSERT_EQ(victims.size(), 2u);
  EXPECT_EQ(victims[0].key, numbered_key(1));
  EXPECT_EQ(victims[1].key, numbered_key(2));
}

TEST(ChooseVictims, NeverTheKeptEntryAndUnknownUsesGoFirst) {
  std::vector<EvictionCandidate> all = {
      {numbered_key(0), 100, 0}, {numbered_key(1), 100, 5}, {numbered_key(2), 300, 1}};
  auto victims = choose_victims(all, 500, 300, numbered_key(0));
  ASSERT_EQ(victims.size(), 1u);
  EXPECT_EQ(victims[0].key, numbered_key(2)) << "key 0 is oldest but kept; key 2 is next";
  EXPECT_TRUE(choose_victims(all, 500, 500, std::nullopt).empty());
}

TEST(ChooseVictims, NothingButTheKeptOneLeftWhenTheTargetIsUnreachable) {
  std::vector<EvictionCandidate> all = {{numbered_key(0), 100, 1}, {numbered_key(1), 100, 2}};
  EXPECT_EQ(choose_victims(all, 200, 0, numbered_key(1)).size(), 1u);
}

class EvictionTest : public ::testing::Test {
protected:
  std::shared_ptr<LmdbStore> open(std::optional<std::uint64_t> limit) {
    LmdbStore::Options options;
    options.max_size = limit;
    return LmdbStore::open(dir.path(), false, options).value();
  }
  test::TempDir dir;
};

TEST_F(EvictionTest, StaysUnderTheLimitAndTheMostRecentlyUsedSurvive) {
  constexpr std::uint64_t k_limit = 200 << 10;
  auto store = open(k_limit);
  // 10 KiB entries: 20 fit. Keep using entries 0..4 while 60 more are stored.
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(store->put(numbered_key(i), numbered_entry(i, 10 << 10)));
    for (int hot = 0; hot < 5 && hot < i; ++hot)
      ASSERT_TRUE(store->get(numbered_key(hot)).value())
          << "hot entry " << hot << " evicted at " << i;
    auto usage = store->usage().value();
    EXPECT_LE(usage.value_bytes, k_limit) << "after put " << i;
  }
  for (int hot = 0; hot < 5; ++hot)
    EXPECT_TRUE(store->get(numbered_key(hot)).value()) << hot;
  for (int i = 59; i > 55; --i)
    EXPECT_TRUE(store->get(numbered_key(i)).value()) << "the newest entries stay";
  for (int i = 5; i < 30; ++i)
    EXPECT_FALSE(store->get(numbered_key(i)).value()) << "old, unused entry " << i << " survived";
  auto counters = store->counters().value();
  EXPECT_GT(counters.get("all", Counter::evicted), 30u);
  EXPECT_EQ(counters.get("all", Counter::evicted_bytes), counters.get("all", Counter::evicted) *
                                                             store->usage().value().value_bytes /
                                                             store->usage().value().entries);
}

TEST_F(EvictionTest, UsesReachTheDiskWithTheNextWriteNotWithEachHit) {
  {
    auto store = open(std::nullopt);
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(store->put(numbered_key(i), numbered_entry(i, 1000)));
  }
  const auto data_size = [&] { return std::filesystem::last_write_time(dir.path() / "data.mdb"); };
  auto store = open(std::nullopt);
  const auto before = data_size();
  for (int n = 0; n < 100; ++n)
    ASSERT_TRUE(store->get(numbered_key(0)).value());
  EXPECT_EQ(data_size(), before) << "a hit wrote to the data file";
  // Entry 0 was used last: a prune down to one entry (1000 bytes, its header and its nodes in
  // the data file) keeps it.
  auto pruned = store->prune(1800);
  ASSERT_TRUE(pruned);
  EXPECT_EQ(pruned->entries, 2u);
  EXPECT_TRUE(store->get(numbered_key(0)).value());
}

TEST_F(EvictionTest, AnEntryLargerThanTheLimitIsRefused) {
  auto store = open(4096);
  auto put = store->put(numbered_key(0), numbered_entry(0, 8192));
  ASSERT_FALSE(put);
  EXPECT_EQ(put.error().code, ErrorCode::store_full);
  EXPECT_NE(put.error().message.find("size limit"), std::string::npos);
}

TEST_F(EvictionTest, ReplacingAndRemovingKeepTheStoredSizeRight) {
  auto store = open(50 << 10);
  ASSERT_TRUE(store->put(numbered_key(0), numbered_entry(0, 20 << 10)));
  ASSERT_TRUE(
      store->put(numbered_key(0), numbered_entry(0, 20 << 10))); // replaced, not counted twice
  ASSERT_TRUE(store->put(numbered_key(1), numbered_entry(1, 20 << 10)));
  EXPECT_TRUE(store->get(numbered_key(0)).value()) << "a replaced entry is not double counted";
  ASSERT_TRUE(store->remove(numbered_key(0)).value());
  ASSERT_TRUE(store->put(numbered_key(2), numbered_entry(2, 20 << 10)));
  EXPECT_TRUE(store->get(numbered_key(1)).value()) << "a removed entry's size was given back";
  EXPECT_EQ(store->usage().value().entries, 2u);
}

TEST_F(EvictionTest, TheCacheAppliesJitcacheMaxSize) {
  Cache cache(Config::from_variables(
      {{"JITCACHE_DIR", dir.path().string()}, {"JITCACHE_MAX_SIZE", "100K"}}));
  for (int i = 0; i < 20; ++i) {
    const Key k = KeyBuilder("opencl").source("kernel " + std::to_string(i)).finish();
    ASSERT_TRUE(cache.get_or_compile(k, [] {
      return Expected<Entry>(Entry{"", std::string(10 << 10, 'x'), {}, 0});
    }));
  }
  cache.flush();
  auto store = LmdbStore::open(dir.path() / "v1", true).value();
  EXPECT_LE(store->usage().value().value_bytes, 100u << 10);
  EXPECT_GT(store->counters().value().get("all", Counter::evicted), 0u);
}

// The size limit bounds the disk, not only what the entries hold: through builds of distinct
// kernels (inline values and values on overflow pages, one new process now and then), the data
// file never takes more than file_bound(limit), by its size or by its blocks.
TEST_F(EvictionTest, TheDataFileStaysWithinTheLimitPlusItsSlack) {
  constexpr std::uint64_t k_limit = 300 << 10;
  const Config config = Config::from_variables(
      {{"JITCACHE_DIR", dir.path().string()}, {"JITCACHE_MAX_SIZE", "300K"}});
  const auto data = dir.path() / "v1" / "data.mdb";
  std::uint64_t largest = 0;
  Key last;
  for (int process = 0; process < 4; ++process) {
    Cache cache(config);
    for (int i = 0; i < 150; ++i) {
      const int n = process * 150 + i;
      const std::size_t bytes = 512 + (n * 7919) % (40 << 10);
      last = KeyBuilder("opencl").source("kernel " + std::to_string(n)).finish();
      ASSERT_TRUE(cache.get_or_compile(last, [bytes] {
        return Expected<Entry>(Entry{"", std::string(bytes, 'x'), {}, 0});
      }));
      struct stat st {};
      ASSERT_EQ(::stat(data.c_str(), &st), 0);
      largest = std::max<std::uint64_t>(
          {largest, std::uint64_t(st.st_size), std::uint64_t(st.st_blocks) * 512});
      ASSERT_LE(std::uint64_t(st.st_size), file_bound(k_limit)) << "after build " << n;
      ASSERT_LE(std::uint64_t(st.st_blocks) * 512, file_bound(k_limit)) << "after build " << n;
    }
  }
  std::cout << "largest data file: " << largest << " bytes for a limit of " << k_limit << " (bound "
            << file_bound(k_limit) << ")\n";
  auto store = LmdbStore::open(dir.path() / "v1", true).value();
  const auto usage = store->usage().value();
  EXPECT_LE(usage.value_bytes, k_limit);
  // Eviction goes down to 90% of the limit, and entries here are 0.5 to 40 KB: where the last
  // build lands in that cycle decides how many are left (10 to 14), not more than half the limit.
  EXPECT_GT(usage.value_bytes, k_limit / 2) << "eviction kept what fits";
  EXPECT_TRUE(store->get(last.digest).value()) << "the newest entry stays";
}

// A data file over its bound (grown by a process with a larger limit, or none) is compacted
// by the next process that opens it alone with the limit.
TEST_F(EvictionTest, AFileOverItsBoundIsCompactedByAProcessThatOpensItAlone) {
  {
    auto store = open(std::nullopt);
    for (int i = 0; i < 60; ++i)
      ASSERT_TRUE(store->put(numbered_key(i), numbered_entry(i, 20 << 10)));
    for (int i = 5; i < 60; ++i)
      ASSERT_TRUE(store->remove(numbered_key(i)).value());
  }
  constexpr std::uint64_t k_limit = 200 << 10;
  ASSERT_GT(std::filesystem::file_size(dir.path() / "data.mdb"), file_bound(k_limit));
  auto store = open(k_limit);
  EXPECT_LE(std::filesystem::file_size(dir.path() / "data.mdb"), file_bound(k_limit));
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(store->get(numbered_key(i)).value()) << "compaction keeps every entry: " << i;
}

// A limit lowered under a tier that holds more than it (`jitcache config max_size` lowered, a
// JITCACHE_MAX_SIZE smaller than the last one): the map is at its bound and full of live
// entries, so evicting needs pages the bound leaves none of. The first write evicts and is
// kept; prune gets down to the limit; the next process to open the file alone compacts it.
TEST_F(EvictionTest, ALimitLoweredUnderAFullerTierEvictsOnTheNextWriteAndOnPrune) {
  const auto fill = [&](int from) {
    auto store = open(std::nullopt);
    for (int i = from; i < from + 60; ++i)
      ASSERT_TRUE(store->put(numbered_key(i), numbered_entry(i, 20 << 10)));
  };
  constexpr std::uint64_t k_limit = 200 << 10;
  fill(0);
  {
    auto store = open(k_limit);
    ASSERT_TRUE(store->put(numbered_key(1000), numbered_entry(1000, 20 << 10)));
    EXPECT_TRUE(store->get(numbered_key(1000)).value());
    EXPECT_LE(store->usage().value().value_bytes, k_limit);
  }
  fill(2000);
  {
    auto store = open(k_limit);
    auto pruned = store->prune(k_limit);
    ASSERT_TRUE(pruned) << pruned.error().message;
    EXPECT_GT(pruned->entries, 0u);
    EXPECT_LE(store->usage().value().value_bytes, k_limit);
  }
  auto store = open(k_limit);
  EXPECT_LE(std::filesystem::file_size(dir.path() / "data.mdb"), file_bound(k_limit));
  EXPECT_TRUE(store->put(numbered_key(3000), numbered_entry(3000, 20 << 10)));
}

} // namespace
} // namespace jitcache
