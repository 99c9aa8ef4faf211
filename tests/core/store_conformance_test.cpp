// One typed suite that every tier must pass (the memory tier, the LMDB user tier, the user tier
// made on its first write, a tier of packages, the remote tier on a real redis-server, and the
// read-only wrapper), plus what only the memory and LMDB tiers promise. Read-only tiers run the
// read cases and check that writes and removals are refused and change nothing.
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/memory_store.hpp"
#include "core/tiers/packages/package_format.hpp"
#include "core/tiers/packages/package_store.hpp"
#include "core/tiers/read_only_store.hpp"
#include "core/tiers/remote/redis_url.hpp"
#include "core/tiers/remote/remote_store.hpp"
#include "core/tiers/user/deferred_user_tier.hpp"
#include "core/tiers/user/lmdb_store.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sys/stat.h>
#include <thread>

namespace jitcache {

using detail::DeferredUserTier;
using detail::encode_entry;
using detail::LmdbStore;
using detail::MemoryStore;
using detail::parse_redis_url;
using detail::RemoteStore;
using detail::UserTier;
namespace {

namespace fs = std::filesystem;
using Visit = Store::Visit;
using Entries = std::map<Digest, Entry>;

Entry entry_of(const std::string& payload, const std::string& backend = "opencl") {
  return Entry{backend, payload, "meta:" + payload.substr(0, 8), 42};
}

// A payload that occurs once in whatever file holds it, so a test can find and damage it.
std::string marked(const std::string& name) {
  return "UNIQUE-MARKER-PAYLOAD-" + name + "-0123456789";
}

// Flips one byte inside each copy of `marker` in `file`, in place (LMDB copies a page on write:
// an older copy may still be in the file). False when `marker` is not there.
bool flip(const fs::path& file, const std::string& marker) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(io)), {});
  bool found = false;
  for (auto at = data.find(marker); at != std::string::npos; at = data.find(marker, at + 1)) {
    io.seekp(static_cast<std::streamoff>(at + 5));
    io.put('#');
    found = true;
  }
  return found && io.flush();
}

// Each factory makes one kind of tier holding given entries, and damages one where a test can.
// `k_writable`: whether the tier takes writes (the cases that write run on those only).

// Puts `entries` through the tier's own put().
void put_all(Store& store, const Entries& entries) {
  for (const auto& [key, entry] : entries)
    ASSERT_TRUE(store.put(key, entry));
}

struct MemoryFactory {
  static constexpr bool k_writable = true;
  static bool available() { return true; }
  std::shared_ptr<Store> make(const fs::path&, const Entries& entries) {
    auto store = std::make_shared<MemoryStore>(64u << 20);
    put_all(*store, entries);
    return store;
  }
  // The memory tier holds copies this process made: nothing outside can damage them.
  std::shared_ptr<Store> damage(const fs::path&, const Digest&, const std::string&) {
    return nullptr;
  }
};

struct LmdbFactory {
  static constexpr bool k_writable = true;
  static bool available() { return true; }
  std::shared_ptr<Store> make(const fs::path& dir, const Entries& entries) {
    store = LmdbStore::open(dir / "user", false).value();
    put_all(*store, entries);
    return store;
  }
  // A byte of the data file flipped under the open environment (its map shares the page).
  std::shared_ptr<Store> damage(const fs::path& dir, const Digest&, const std::string& marker) {
    return flip(dir / "user" / "data.mdb", marker) ? store : nullptr;
  }
  std::shared_ptr<Store> store;
};

struct DeferredFactory {
  static constexpr bool k_writable = true;
  static bool available() { return true; }
  std::shared_ptr<Store> make(const fs::path& dir, const Entries& entries) {
    store = std::make_shared<DeferredUserTier>(
        dir / "user", [dir]() -> Expected<std::shared_ptr<UserTier>> {
          auto opened = LmdbStore::open(dir / "user", false);
          if (!opened)
            return std::move(opened).error();
          return std::shared_ptr<UserTier>(std::move(*opened));
        });
    put_all(*store, entries);
    return store;
  }
  std::shared_ptr<Store> damage(const fs::path& dir, const Digest&, const std::string& marker) {
    return flip(dir / "user" / "data.mdb", marker) ? store : nullptr;
  }
  std::shared_ptr<Store> store;
};

struct ReadOnlyLmdbFactory {
  static constexpr bool k_writable = false;
  static bool available() { return true; }
  std::shared_ptr<Store> make(const fs::path& dir, const Entries& entries) {
    auto inner = LmdbStore::open(dir / "user", false).value();
    put_all(*inner, entries);
    store = std::make_shared<detail::ReadOnlyStore>(inner);
    return store;
  }
  std::shared_ptr<Store> damage(const fs::path& dir, const Digest&, const std::string& marker) {
    return flip(dir / "user" / "data.mdb", marker) ? store : nullptr;
  }
  std::shared_ptr<Store> store;
};

struct PackageFactory {
  static constexpr bool k_writable = false;
  static bool available() { return true; }
  // A package written by the package writer, holding `entries`, opened as the system tier.
  std::shared_ptr<Store> make(const fs::path& dir, const Entries& entries) {
    held = entries;
    return open(dir / "tier.jcpkg", {});
  }
  // The package written again with one byte of the entry's bytes flipped (its own checksum no
  // longer matches; the package around it is intact).
  std::shared_ptr<Store> damage(const fs::path& dir, const Digest& key, const std::string& marker) {
    return open(dir / "damaged.jcpkg", {{key, marker}});
  }
  std::shared_ptr<Store> open(const fs::path& file, const std::map<Digest, std::string>& flips) {
    std::vector<detail::PackageEntry> entries;
    for (const auto& [key, entry] : held) {
      std::string bytes = encode_entry(key, entry);
      if (auto it = flips.find(key); it != flips.end()) {
        const auto at = bytes.find(it->second);
        EXPECT_NE(at, std::string::npos);
        bytes[at + 5] = '#';
      }
      entries.push_back({key, std::move(bytes)});
    }
    const detail::PackageTarget target{"opencl", "conformance", {}};
    EXPECT_TRUE(detail::write_package(file, target, std::move(entries)));
    return detail::PackageStore::open_system({file}, false);
  }
  Entries held;
};

struct RemoteFactory {
  static constexpr bool k_writable = true;
  static bool available() { return test::RedisServer::available(); }
  std::shared_ptr<Store> make(const fs::path&, const Entries& entries) {
    server = std::make_unique<test::RedisServer>();
    server->start();
    store = std::make_shared<RemoteStore>(*parse_redis_url(server->url("?timeout_ms=5000")),
                                          "conformance secret");
    put_all(*store, entries);
    return store;
  }
  // A value that is not a sealed entry, written with a raw command.
  std::shared_ptr<Store> damage(const fs::path&, const Digest& key, const std::string& marker) {
    auto set = store->run({"SET", store->redis_key(key.hex()), "not sealed: " + marker});
    EXPECT_TRUE(set) << set.error().message;
    return store;
  }
  std::unique_ptr<test::RedisServer> server;
  std::shared_ptr<RemoteStore> store;
};

template <typename Factory> class StoreConformance : public ::testing::Test {
protected:
  void SetUp() override {
    if (!Factory::available())
      GTEST_SKIP() << "redis-server is not installed";
  }
  // The tier under test, holding `entries`.
  std::shared_ptr<Store> make(const Entries& entries = {}) {
    auto store = factory.make(dir.path(), entries);
    EXPECT_EQ(store->writable(), Factory::k_writable);
    return store;
  }
  // What visit() finds for `key`, and the payload it handed over ("" on anything but a hit).
  static std::pair<Visit, std::string> read(Store& store, const Digest& key) {
    std::string payload;
    int uses = 0;
    auto seen = store.visit(key, [&](const EntryView& view) {
      payload = std::string(view.payload);
      ++uses;
    });
    EXPECT_TRUE(seen) << seen.error().message;
    if (!seen)
      return {Visit::miss(), ""};
    EXPECT_EQ(uses, *seen ? 1 : 0);
    return {std::move(*seen), payload};
  }
  test::TempDir dir;
  Factory factory;
};

using Factories = ::testing::Types<MemoryFactory, LmdbFactory, DeferredFactory, PackageFactory,
                                   RemoteFactory, ReadOnlyLmdbFactory>;
TYPED_TEST_SUITE(StoreConformance, Factories);

TYPED_TEST(StoreConformance, MissOnEmptyIsNotAnError) {
  auto store = this->make();
  const auto [seen, payload] = this->read(*store, Digest::of("absent"));
  EXPECT_EQ(seen.outcome, Visit::Outcome::miss);
  auto got = store->get(Digest::of("absent"));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_FALSE(*got);
}

TYPED_TEST(StoreConformance, HitHandsOverTheExactEntry) {
  const Digest key = Digest::of("k");
  auto store = this->make({{key, entry_of("payload-1")}, {Digest::of("other"), entry_of("o")}});
  const auto [seen, payload] = this->read(*store, key);
  EXPECT_EQ(seen.outcome, Visit::Outcome::hit);
  EXPECT_TRUE(seen.reason.empty());
  EXPECT_EQ(payload, "payload-1");
  auto got = store->get(key);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->payload, "payload-1");
  EXPECT_EQ((*got)->metadata, "meta:payload-");
  EXPECT_EQ((*got)->backend, "opencl");
  EXPECT_EQ((*got)->compile_ns, 42u);
}

TYPED_TEST(StoreConformance, OverwriteReplacesOrIsRefused) {
  const Digest key = Digest::of("k");
  auto store = this->make({{key, entry_of("old")}});
  auto put = store->put(key, entry_of("new"));
  if (TypeParam::k_writable) {
    ASSERT_TRUE(put) << put.error().message;
    EXPECT_EQ(this->read(*store, key).second, "new");
  } else {
    ASSERT_FALSE(put);
    EXPECT_EQ(put.error().code, ErrorCode::read_only);
    EXPECT_EQ(this->read(*store, key).second, "old");
  }
}

TYPED_TEST(StoreConformance, EvictThenMissOrIsRefused) {
  const Digest key = Digest::of("k");
  auto store = this->make({{key, entry_of("x")}});
  auto removed = store->remove(key);
  if (TypeParam::k_writable) {
    ASSERT_TRUE(removed) << removed.error().message;
    EXPECT_TRUE(*removed);
    EXPECT_EQ(this->read(*store, key).first.outcome, Visit::Outcome::miss);
    EXPECT_FALSE(store->remove(key).value());
    EXPECT_FALSE(store->get(key).value());
  } else {
    ASSERT_FALSE(removed);
    EXPECT_EQ(removed.error().code, ErrorCode::read_only);
    EXPECT_EQ(this->read(*store, key).second, "x");
  }
}

TYPED_TEST(StoreConformance, DamagedEntryIsReportedDamagedNeverHandedOver) {
  const Digest key = Digest::of("k");
  const std::string marker = marked("k");
  auto store = this->make({{key, entry_of(marker)}, {Digest::of("intact"), entry_of("fine")}});
  auto damaged = this->factory.damage(this->dir.path(), key, marker);
  if (!damaged)
    GTEST_SKIP() << "nothing outside the process can damage this tier's entries";
  const auto [seen, payload] = this->read(*damaged, key);
  EXPECT_EQ(seen.outcome, Visit::Outcome::damaged);
  EXPECT_FALSE(seen.reason.empty());
  EXPECT_TRUE(seen.damage());
  EXPECT_TRUE(payload.empty());
  // Read again (reported once or each time, as the tier says): never the wrong bytes.
  const auto again = this->read(*damaged, key);
  EXPECT_NE(again.first.outcome, Visit::Outcome::hit);
  auto got = damaged->get(key);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_FALSE(*got);
  // The damage is the entry's alone.
  EXPECT_EQ(this->read(*damaged, Digest::of("intact")).second, "fine");
}

TYPED_TEST(StoreConformance, LargeBinaryEntrySurvives) {
  std::string big(3u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>(i * 131 % 251);
  const Digest key = Digest::of("big");
  auto store = this->make({{key, entry_of(big, "cuda")}});
  const auto [seen, payload] = this->read(*store, key);
  EXPECT_EQ(seen.outcome, Visit::Outcome::hit);
  EXPECT_TRUE(payload == big);
  auto got = store->get(key);
  ASSERT_TRUE(got && *got);
  EXPECT_TRUE((*got)->payload == big);
  EXPECT_EQ((*got)->backend, "cuda");
}

TYPED_TEST(StoreConformance, EightConcurrentReadersSeeTheExactEntries) {
  Entries entries;
  std::vector<Digest> keys;
  for (int i = 0; i < 16; ++i) {
    keys.push_back(Digest::of("k" + std::to_string(i)));
    entries.emplace(keys.back(), entry_of(marked(std::to_string(i))));
  }
  auto store = this->make(entries);
  std::atomic<int> wrong{0};
  std::atomic<int> hits{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 8; ++t)
    readers.emplace_back([&, t] {
      for (int n = 0; n < 64; ++n) {
        const std::size_t i = (t * 7 + n) % keys.size();
        std::string payload;
        auto seen = store->visit(keys[i], [&](const EntryView& v) { payload = v.payload; });
        if (!seen || !*seen || payload != marked(std::to_string(i)))
          ++wrong;
        else
          ++hits;
      }
    });
  for (auto& reader : readers)
    reader.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(hits.load(), 8 * 64);
}

TYPED_TEST(StoreConformance, ForEachListsEveryEntry) {
  Entries entries;
  std::set<Digest> keys;
  for (int i = 0; i < 50; ++i) {
    const Digest key = Digest::of("k" + std::to_string(i));
    keys.insert(key);
    entries.emplace(key, entry_of("p" + std::to_string(i)));
  }
  auto store = this->make(entries);
  std::set<Digest> listed;
  ASSERT_TRUE(store->for_each([&](const Store::Item& item) {
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
  auto seen = store->visit(key, [](const EntryView&) { ADD_FAILURE() << "damage handed over"; });
  ASSERT_TRUE(seen) << "a corrupt entry must not be a store failure";
  EXPECT_EQ(seen->outcome, Store::Visit::Outcome::damaged);
  // Reported once per process (the core counts it once), a miss after that.
  EXPECT_EQ(store->visit(key, [](const EntryView&) {})->outcome, Store::Visit::Outcome::miss);
  auto got = store->get(key);
  ASSERT_TRUE(got) << "a corrupt entry must not be a store failure";
  EXPECT_FALSE(*got) << "a corrupt entry must read as a miss";
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
