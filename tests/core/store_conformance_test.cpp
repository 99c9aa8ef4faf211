// One typed suite that every Store must pass, plus what only the LMDB user tier promises.
#include "core/lmdb_store.hpp"
#include "core/memory_store.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sys/stat.h>

namespace jitcache {
namespace {

Entry entry_of(const std::string& payload, const std::string& backend = "opencl") {
  return Entry{backend, payload, "meta:" + payload.substr(0, 8), 42};
}

struct MemoryFactory {
  std::shared_ptr<Store> make(const std::filesystem::path&) {
    return std::make_shared<MemoryStore>(64u << 20);
  }
};
struct LmdbFactory {
  std::shared_ptr<Store> make(const std::filesystem::path& dir) {
    return LmdbStore::open(dir / "user", false).value();
  }
};

template <typename Factory> class StoreConformance : public ::testing::Test {
protected:
  void SetUp() override { store = Factory().make(dir.path()); }
  test::TempDir dir;
  std::shared_ptr<Store> store;
};

using Factories = ::testing::Types<MemoryFactory, LmdbFactory>;
TYPED_TEST_SUITE(StoreConformance, Factories);

TYPED_TEST(StoreConformance, MissIsEmptyNotError) {
  auto got = this->store->get(Digest::of("absent"));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_FALSE(*got);
}

TYPED_TEST(StoreConformance, PutThenGetReturnsTheSameEntry) {
  const Digest key = Digest::of("k");
  ASSERT_TRUE(this->store->put(key, entry_of("payload-1")));
  auto got = this->store->get(key);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->payload, "payload-1");
  EXPECT_EQ((*got)->metadata, "meta:payload-");
  EXPECT_EQ((*got)->backend, "opencl");
  EXPECT_EQ((*got)->compile_ns, 42u);
}

TYPED_TEST(StoreConformance, PutReplaces) {
  const Digest key = Digest::of("k");
  ASSERT_TRUE(this->store->put(key, entry_of("old")));
  ASSERT_TRUE(this->store->put(key, entry_of("new")));
  EXPECT_EQ((*this->store->get(key).value()).payload, "new");
}

TYPED_TEST(StoreConformance, RemoveReportsWhetherPresent) {
  const Digest key = Digest::of("k");
  ASSERT_TRUE(this->store->put(key, entry_of("x")));
  EXPECT_TRUE(this->store->remove(key).value());
  EXPECT_FALSE(this->store->remove(key).value());
  EXPECT_FALSE(this->store->get(key).value());
}

TYPED_TEST(StoreConformance, BinaryAndLargePayloadsSurvive) {
  std::string big(3u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>(i * 131 % 251);
  const Digest key = Digest::of("big");
  ASSERT_TRUE(this->store->put(key, entry_of(big, "cuda")));
  auto got = this->store->get(key);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->payload, big);
  EXPECT_EQ((*got)->backend, "cuda");
}

TYPED_TEST(StoreConformance, ForEachListsEveryEntry) {
  std::set<Digest> keys;
  for (int i = 0; i < 50; ++i) {
    const Digest key = Digest::of("k" + std::to_string(i));
    keys.insert(key);
    ASSERT_TRUE(this->store->put(key, entry_of("p" + std::to_string(i))));
  }
  std::set<Digest> listed;
  ASSERT_TRUE(this->store->for_each([&](const Store::Item& item) {
    listed.insert(item.key);
    EXPECT_TRUE(item.valid);
    EXPECT_EQ(item.backend, "opencl");
    EXPECT_GT(item.bytes, 0u);
  }));
  EXPECT_EQ(listed, keys);
}

TEST(MemoryStoreTest, EvictsLeastRecentlyUsedWithinItsByteBound) {
  MemoryStore store(300);
  const std::string hundred(100, 'x');
  for (const char* k : {"a", "b", "c"})
    ASSERT_TRUE(store.put(Digest::of(k), Entry{"opencl", hundred, {}, 0}));
  ASSERT_TRUE(store.get(Digest::of("a")).value()); // a becomes most recent
  ASSERT_TRUE(store.put(Digest::of("d"), Entry{"opencl", hundred, {}, 0}));
  EXPECT_TRUE(store.get(Digest::of("a")).value());
  EXPECT_FALSE(store.get(Digest::of("b")).value());
  EXPECT_LE(store.bytes(), 300u);
  ASSERT_TRUE(store.put(Digest::of("huge"), Entry{"opencl", std::string(301, 'y'), {}, 0}));
  EXPECT_FALSE(store.get(Digest::of("huge")).value());
}

class LmdbStoreTest : public ::testing::Test {
protected:
  test::TempDir dir;
};

TEST_F(LmdbStoreTest, CreatesMissingParentsPrivately) {
  const auto path = dir.path() / "a" / "b" / "c";
  auto store = LmdbStore::open(path, false);
  ASSERT_TRUE(store) << store.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE((*store)->writable());
}

TEST_F(LmdbStoreTest, AFileInsteadOfADirectoryIsAClearError) {
  const auto path = dir.path() / "file";
  std::ofstream(path) << "not a directory";
  auto store = LmdbStore::open(path, false);
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().message.find("is not a directory"), std::string::npos);
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "not a directory");
}

TEST_F(LmdbStoreTest, ReadOnlyOpenOfAMissingTierFailsWithoutCreatingIt) {
  auto store = LmdbStore::open(dir.path() / "absent", true);
  ASSERT_FALSE(store);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "absent"));
}

TEST_F(LmdbStoreTest, OneEnvironmentPerDirectory) {
  auto a = LmdbStore::open(dir.path(), false).value();
  auto b = LmdbStore::open(dir.path(), false).value();
  ASSERT_TRUE(a->put(Digest::of("k"), entry_of("shared")));
  EXPECT_EQ((*b->get(Digest::of("k")).value()).payload, "shared");
}

TEST_F(LmdbStoreTest, FlippedByteOnDiskIsAMissThenReplaced) {
  const Digest key = Digest::of("k");
  const std::string marker = "UNIQUE-MARKER-PAYLOAD-0123456789";
  {
    auto store = LmdbStore::open(dir.path(), false).value();
    ASSERT_TRUE(store->put(key, entry_of(marker)));
  }
  // Flip one byte of the payload in the data file itself.
  {
    std::fstream file(dir.path() / "data.mdb", std::ios::in | std::ios::out | std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(file)), {});
    const auto at = data.find(marker);
    ASSERT_NE(at, std::string::npos);
    file.seekp(static_cast<std::streamoff>(at + 5));
    file.put('#');
  }
  auto store = LmdbStore::open(dir.path(), false).value();
  const auto corrupt_before = store->corrupt_seen();
  auto got = store->get(key);
  ASSERT_TRUE(got) << "a corrupt entry must not be a store failure";
  EXPECT_FALSE(*got) << "a corrupt entry must read as a miss";
  EXPECT_EQ(store->corrupt_seen(), corrupt_before + 1);
  bool listed_invalid = false;
  ASSERT_TRUE(store->for_each([&](const Store::Item& item) { listed_invalid |= !item.valid; }));
  EXPECT_TRUE(listed_invalid);

  ASSERT_TRUE(store->put(key, entry_of(marker)));
  got = store->get(key);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->payload, marker);
}

TEST_F(LmdbStoreTest, CountersAccumulateAcrossWrites) {
  auto store = LmdbStore::open(dir.path(), false).value();
  Stats delta;
  delta.add("opencl", Counter::compiles, 2);
  delta.add_hits("opencl", "user", 5);
  ASSERT_TRUE(store->add_counters(delta));
  ASSERT_TRUE(store->add_counters(delta));
  auto stats = store->counters().value();
  EXPECT_EQ(stats.get("opencl", Counter::compiles), 4u);
  EXPECT_EQ(stats.hits("opencl"), 10u);
  ASSERT_TRUE(store->clear());
  EXPECT_EQ(store->counters().value().get("opencl", Counter::compiles), 0u);
}

} // namespace
} // namespace jitcache
