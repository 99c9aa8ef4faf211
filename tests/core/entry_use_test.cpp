// What the user tier keeps of an entry's use (core/tiers/user/access_log.hpp): the last use and
// the hits, written in the batches that hits already made, read back by `jitcache list`; the
// form an older jitcache wrote, and damaged bytes, read as unknown, never as a wrong number.
#include "core/tiers/user/access_log.hpp"
#include "core/tiers/user/lmdb_store.hpp"

#include "tests/support/files.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <lmdb.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace jitcache {

using detail::AccessLog;
using detail::decode_use;
using detail::encode_use;
using detail::EntryUse;
using detail::LmdbStore;

namespace {
using test::read_file;
using test::write_file;

namespace fs = std::filesystem;

const Digest k_entry_key = Digest::of("an entry");

TEST(EntryUse, TheStoredFormReadsBackWhatWasWritten) {
  const EntryUse use = decode_use(k_entry_key, encode_use(k_entry_key, 1234567, 42));
  EXPECT_EQ(use.last_use_us, 1234567u);
  EXPECT_EQ(use.hits, 42u);
}

TEST(EntryUse, TheFormWrittenBeforeHitsWereCountedHasNoCount) {
  const std::uint64_t when = 987654321;
  const EntryUse use = decode_use(k_entry_key, {reinterpret_cast<const char*>(&when), sizeof when});
  EXPECT_EQ(use.last_use_us, when);
  EXPECT_EQ(use.hits, std::nullopt) << "unknown, not 0 and not garbage";
}

TEST(EntryUse, EveryDamagedBitAnotherKeyOrAnotherSizeIsUnknown) {
  const std::string stored = encode_use(k_entry_key, 1234567, 42);
  for (std::size_t bit = 0; bit < stored.size() * 8; ++bit) {
    std::string damaged = stored;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    const EntryUse use = decode_use(k_entry_key, damaged);
    EXPECT_EQ(use.hits, std::nullopt) << "bit " << bit;
    EXPECT_EQ(use.last_use_us, std::nullopt) << "bit " << bit;
  }
  EXPECT_EQ(decode_use(Digest::of("another entry"), stored).hits, std::nullopt);
  for (std::size_t size : {0, 1, 7, 9, 15, 17, 32}) {
    const EntryUse use = decode_use(k_entry_key, std::string(size, '\x5a'));
    EXPECT_EQ(use.hits, std::nullopt) << size;
    EXPECT_EQ(use.last_use_us, std::nullopt) << size;
  }
}

TEST(EntryUse, TheLogAddsHitsAndKeepsTheLatestTime) {
  AccessLog log;
  log.record(k_entry_key, 30);
  log.record(k_entry_key, 10);
  log.record(Digest::of("b"), 5);
  auto batch = log.take();
  EXPECT_TRUE(log.empty());
  ASSERT_EQ(batch.size(), 2u);
  log.record(k_entry_key, 20);
  log.restore(batch); // a write that failed: its hits are not lost
  for (const auto& [key, use] : log.take())
    if (key == k_entry_key) {
      EXPECT_EQ(use.hits, 3u);
      EXPECT_EQ(use.when_us, 30u);
    } else {
      EXPECT_EQ(use.hits, 1u);
    }
}

class EntryUseStore : public ::testing::Test {
protected:
  std::shared_ptr<LmdbStore> open() { return LmdbStore::open(dir.path(), false).value(); }
  void hit(int times) {
    auto store = open();
    for (int i = 0; i < times; ++i)
      ASSERT_TRUE(store->visit(k_entry_key, [](const EntryView&) {}).value());
  } // the last handle writes the batch
  EntryUse use() { return open()->entry_use(k_entry_key).value(); }
  test::TempDir dir;
};

TEST_F(EntryUseStore, HitsAreCountedInTheBatchesThatKeepTheLastUse) {
  {
    auto store = open();
    ASSERT_TRUE(store->put(k_entry_key, Entry{"opencl", "binary"}));
    EXPECT_EQ(store->entry_use(k_entry_key).value().hits, 0u) << "stored, not hit";
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(store->visit(k_entry_key, [](const EntryView&) {}).value());
    ASSERT_TRUE(store->peek(k_entry_key, [](const EntryView&) {}).value());
    EXPECT_EQ(store->entry_use(k_entry_key).value().hits, 0u) << "no write per hit: batched";
  }
  EXPECT_EQ(use().hits, 3u) << "a peek is not a hit";
  hit(2);
  EXPECT_EQ(use().hits, 5u) << "added to, across processes' batches";
  {
    auto store = open();
    ASSERT_TRUE(store->put(k_entry_key, Entry{"opencl", "binary"}));
  }
  EXPECT_EQ(use().hits, 5u) << "stored again (an import, a remote copy): the count stays";
  ASSERT_TRUE(open()->remove(k_entry_key).value());
  {
    auto store = open();
    ASSERT_TRUE(store->put(k_entry_key, Entry{"opencl", "binary"}));
  }
  EXPECT_EQ(use().hits, 0u) << "a new entry starts from 0";
}

// An entry whose use an older jitcache wrote (8 bytes: the time alone) lists "unknown" hits
// until it is hit; then it counts from there.
TEST_F(EntryUseStore, AnEntryOfAnOlderJitcacheHasUnknownHitsUntilHit) {
  ASSERT_TRUE(open()->put(k_entry_key, Entry{"opencl", "binary"}));
  {
    MDB_env* env = nullptr;
    ASSERT_EQ(mdb_env_create(&env), MDB_SUCCESS);
    mdb_env_set_maxdbs(env, 8);
    ASSERT_EQ(mdb_env_open(env, dir.path().c_str(), 0, 0600), MDB_SUCCESS);
    MDB_txn* txn = nullptr;
    MDB_dbi access = 0;
    ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), MDB_SUCCESS);
    ASSERT_EQ(mdb_dbi_open(txn, "access", 0, &access), MDB_SUCCESS);
    std::uint64_t when = AccessLog::now_us();
    MDB_val k{k_entry_key.bytes.size(), const_cast<std::uint8_t*>(k_entry_key.bytes.data())},
        v{sizeof when, &when};
    ASSERT_EQ(mdb_put(txn, access, &k, &v, 0), MDB_SUCCESS);
    ASSERT_EQ(mdb_txn_commit(txn), MDB_SUCCESS);
    mdb_env_close(env);
  }
  EntryUse before = use();
  EXPECT_TRUE(before.last_use_us);
  EXPECT_EQ(before.hits, std::nullopt);
  hit(1);
  EXPECT_EQ(use().hits, 1u);
}

// Damage to the count in the data file itself: read as unknown, the entry still served, the
// count started again by the next hits.
TEST_F(EntryUseStore, ADamagedCountInTheDataFileIsUnknownAndCountedAgain) {
  ASSERT_TRUE(open()->put(k_entry_key, Entry{"opencl", "binary"}));
  hit(7);
  ASSERT_TRUE(open()->put(Digest::of("another"), Entry{"opencl", "binary"})); // folds the use log
  const EntryUse counted = use();
  ASSERT_EQ(counted.hits, 7u);
  const std::string value = encode_use(k_entry_key, *counted.last_use_us, 7);
  const fs::path data = dir.path() / "data.mdb";
  std::string bytes = read_file(data);
  const std::size_t at = bytes.find(value);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(value, at + 1), std::string::npos);
  bytes[at + 8] = static_cast<char>(bytes[at + 8] ^ 0x10); // the count: 7 -> 23
  write_file(data, bytes);

  const EntryUse damaged = use();
  EXPECT_EQ(damaged.hits, std::nullopt);
  EXPECT_EQ(damaged.last_use_us, std::nullopt);
  hit(2);
  EXPECT_EQ(use().hits, 2u);
}

} // namespace
} // namespace jitcache
