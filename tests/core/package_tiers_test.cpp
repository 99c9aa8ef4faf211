// The package tiers inside a Cache: looked up after memory and before the user tier, counted
// per tier, damage counted corrupt and compiled around, nothing written to the user tier.
#include <jitcache/cache.hpp>

#include "core/engine/cache_core.hpp"
#include "core/engine/tier_set.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/packages/package_store.hpp"
#include "core/tiers/user/deferred_user_tier.hpp"
#include "core/tiers/user/lmdb_store.hpp"
#include "core/tiers/user/use_log.hpp"
#include "core/tiers/user/user_store.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

namespace jitcache::detail {
namespace {

namespace fs = std::filesystem;

Key cuda_key_for(const std::string& source) {
  return KeyBuilder("cuda")
      .device("compute_capability", "90")
      .device("target_arch", "sm_90")
      .source(source)
      .finish();
}

class PackageTiersTest : public ::testing::Test {
protected:
  Config config() { return Config::from_variables({{"JITCACHE_DIR", m_dir.path().string()}}); }
  // A package file holding `binary` for each of `sources`, and `records`; returns its bytes.
  std::string package(const std::string& name, const std::vector<std::string>& sources,
                      const std::string& binary, std::vector<PackageRecord> records = {}) {
    std::vector<PackageEntry> entries;
    for (const std::string& source : sources) {
      const Key key = cuda_key_for(source);
      Entry entry("cuda", binary, "", 5'000'000);
      entry.key_fields = key.stored_fields;
      entries.push_back({key.digest, encode_entry(key.digest, entry)});
    }
    const fs::path file = m_dir.path() / name;
    EXPECT_TRUE(write_package(file, target_of("cuda", cuda_key_for("").fields), entries,
                              std::move(records)));
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  detail::TierSet tiers(std::shared_ptr<PackageStore> embedded) {
    auto user = open_user_store(config(), false);
    EXPECT_TRUE(user);
    detail::TierSet set;
    set.add_packages(std::move(embedded))
        .add_packages(PackageStore::open_system({m_dir.path()}, false))
        .add_user(*user);
    return set;
  }
  // A configuration whose user tier is under `user` (its folder made, 0700) and whose system tier
  // is the package cuda-sm_90.jcpkg, which holds "a": a process whose requests packages serve.
  Config package_only(const fs::path& user) {
    package("cuda-sm_90.jcpkg", {"a"}, "SYSTEM");
    Config config = Config::from_variables(
        {{"JITCACHE_DIR", user.string()},
         {"JITCACHE_SYSTEM_PATH", (m_dir.path() / "cuda-sm_90.jcpkg").string()}});
    fs::create_directories(config.cache_dir);
    fs::permissions(config.cache_dir, fs::perms::owner_all);
    return config;
  }
  // What a Cache reads a package-only tier's counters through (cache_user_tier): a
  // DeferredUserTier. Null, with a failure, when it is not one.
  static std::shared_ptr<DeferredUserTier> deferred_tier(const Config& config) {
    auto user = cache_user_tier(config);
    auto* deferred = user ? std::get_if<std::shared_ptr<DeferredUserTier>>(&*user) : nullptr;
    if (!deferred) {
      ADD_FAILURE() << "the user tier is not a deferred one";
      return nullptr;
    }
    return *deferred;
  }
  // The system tier's hits `tier` counts, read from the use log: the tier is not opened for it.
  static std::uint64_t logged_system_hits(DeferredUserTier& tier) {
    auto counted = tier.counters();
    EXPECT_TRUE(counted) << counted.error().message;
    EXPECT_FALSE(tier.opened());
    return counted ? counted->hits("cuda", "system") : 0;
  }
  // A process asking for "a" (package_only()): the package answers it, nothing compiles.
  static void hit_a_from_package(const Config& config) {
    Cache cache(config);
    BuildInfo info;
    ASSERT_TRUE(cache.get_or_compile(
        cuda_key_for("a"),
        [] {
          return Expected<Entry>(Entry{"cuda", "COMPILED"});
        },
        &info));
    EXPECT_EQ(info.tier, "system");
  }
  std::uint64_t user_entries() {
    auto store = open_user_store(config(), true);
    std::uint64_t n = 0;
    EXPECT_TRUE((*store)->for_each([&](const Store::Item&) { ++n; }));
    return n;
  }
  test::TempDir m_dir;
};

TEST_F(PackageTiersTest, EmbeddedThenSystemThenUserWithNothingWritten) {
  const std::string linked = package("embedded.bin", {"a"}, "EMBEDDED");
  fs::remove(m_dir.path() / "embedded.bin");
  package("cuda-sm_90.jcpkg", {"a", "b"}, "SYSTEM");
  int compiles = 0;
  const auto compile = [&]() -> Expected<Entry> {
    ++compiles;
    return Entry{"cuda", "COMPILED"};
  };
  {
    Cache cache(config(), tiers(PackageStore::open_embedded({{"app.jcpkg", linked}})));
    BuildInfo info;
    auto a = cache.get_or_compile(cuda_key_for("a"), compile, &info);
    ASSERT_TRUE(a);
    EXPECT_EQ(info.tier, "embedded");
    EXPECT_EQ(a->entry.payload, "EMBEDDED");
    auto b = cache.get_or_compile(cuda_key_for("b"), compile, &info);
    ASSERT_TRUE(b);
    EXPECT_EQ(info.tier, "system");
    EXPECT_EQ(b->entry.payload, "SYSTEM");
    static_cast<void>(cache.get_or_compile(cuda_key_for("a"), compile, &info));
    EXPECT_EQ(info.tier, "memory");
    static_cast<void>(cache.get_or_compile(cuda_key_for("c"), compile, &info));
    EXPECT_EQ(info.tier, "compile");
    const Stats s = cache.session_stats();
    EXPECT_EQ(s.hits("cuda", "embedded"), 1u);
    EXPECT_EQ(s.hits("cuda", "system"), 1u);
    EXPECT_EQ(s.get("cuda", Counter::saved_ns), 15'000'000u); // the memory hit saved one too
    EXPECT_EQ(compiles, 1);
  }
  EXPECT_EQ(user_entries(), 1u); // only the compiled one
}

// The records of the package tiers, asked in lookup order as entries are (embedded, then
// system), for a backend whose persistent tiers are on; none in a cache without packages.
TEST_F(PackageTiersTest, PackagedRecordsComeFromThePackageTiersInLookupOrder) {
  const Digest both = Digest::of("in both"), system_only = Digest::of("in the system tier");
  const std::string linked = package("embedded.bin", {"a"}, "EMBEDDED", {{both, "embedded's"}});
  fs::remove(m_dir.path() / "embedded.bin");
  package("cuda-sm_90.jcpkg", {"b"}, "SYSTEM",
          {{both, "system's"}, {system_only, "the system's own"}});
  const auto embedded = [&] { return PackageStore::open_embedded({{"app.jcpkg", linked}}); };
  Cache cache(config(), tiers(embedded()));
  const CacheCore& core = core_of(cache);
  EXPECT_EQ(core.packaged_record("cuda", both), "embedded's");
  EXPECT_EQ(core.packaged_record("cuda", system_only), "the system's own");
  EXPECT_FALSE(core.packaged_record("cuda", Digest::of("in neither")));
  EXPECT_FALSE(core.packaged_record("hip", both)); // no package serves hip
  Cache off(Config::from_variables(
                {{"JITCACHE_DIR", m_dir.path().string()}, {"JITCACHE_DISABLE", "cuda"}}),
            tiers(embedded()));
  EXPECT_FALSE(core_of(off).packaged_record("cuda", both));
  Cache none(config(), std::vector<std::shared_ptr<Store>>{});
  EXPECT_FALSE(core_of(none).packaged_record("cuda", both));
}

TEST_F(PackageTiersTest, DamagedPackageEntryIsCountedCorruptAndCompiledAround) {
  std::string bytes = package("cuda-sm_90.jcpkg", {"a"}, "SYSTEM");
  bytes[bytes.size() - 2] ^= 1; // in the entry's payload
  std::ofstream(m_dir.path() / "cuda-sm_90.jcpkg", std::ios::binary) << bytes;
  int compiles = 0;
  Cache cache(config(), tiers(PackageStore::open_embedded({})));
  testing::internal::CaptureStderr();
  BuildInfo info;
  auto a = cache.get_or_compile(
      cuda_key_for("a"),
      [&]() -> Expected<Entry> {
        ++compiles;
        return Entry{"cuda", "COMPILED"};
      },
      &info);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->entry.payload, "COMPILED");
  EXPECT_EQ(info.tier, "compile");
  EXPECT_EQ(cache.session_stats().get("cuda", Counter::corrupt), 1u);
  EXPECT_NE(err.find("is damaged"), std::string::npos) << err;
  EXPECT_EQ(compiles, 1);
}

// A new machine's first run: packages serve it, and the user tier (an LMDB environment, made
// with synced writes) is made only when something is written to it.
TEST_F(PackageTiersTest, PackageHitsMakeNoUserTierUntilSomethingIsWritten) {
  package("cuda-sm_90.jcpkg", {"a"}, "SYSTEM");
  const fs::path user = m_dir.path() / "new" / "user";
  const Config fresh = Config::from_variables(
      {{"JITCACHE_DIR", user.string()},
       {"JITCACHE_SYSTEM_PATH", (m_dir.path() / "cuda-sm_90.jcpkg").string()}});
  int compiles = 0;
  const auto compile = [&]() -> Expected<Entry> {
    ++compiles;
    return Entry{"cuda", "COMPILED"};
  };
  {
    Cache cache(fresh);
    BuildInfo info;
    ASSERT_TRUE(cache.get_or_compile(cuda_key_for("a"), compile, &info));
    EXPECT_EQ(info.tier, "system");
    EXPECT_FALSE(cache.lookup(cuda_key_for("b"))); // a read finds nothing and makes nothing
    EXPECT_FALSE(fs::exists(m_dir.path() / "new")) << "a package hit made the user tier";
    auto b = cache.get_or_compile(cuda_key_for("b"), compile, &info);
    ASSERT_TRUE(b);
    EXPECT_EQ(info.tier, "compile");
    cache.flush();
    EXPECT_TRUE(fs::is_regular_file(fresh.cache_dir / "data.mdb"));
  }
  Cache next(fresh); // the next process finds what the first stored, and its counters
  BuildInfo info;
  ASSERT_TRUE(next.get_or_compile(cuda_key_for("b"), compile, &info));
  EXPECT_EQ(info.tier, "user");
  EXPECT_EQ(compiles, 1);
  auto kept = open_user_store(fresh, true);
  ASSERT_TRUE(kept);
  auto counters = (*kept)->counters();
  ASSERT_TRUE(counters);
  EXPECT_EQ(counters->hits("cuda", "system"), 1u);
}

// A process whose requests packages served tells its counters through the use log: it makes
// no LMDB environment (a new machine's first run) and opens none (a later run), and the counters
// are read from the log until the first write folds them in, once.
TEST_F(PackageTiersTest, PackageOnlyProcessesTellTheirCountersWithoutTheEnvironment) {
  package("cuda-sm_90.jcpkg", {"a"}, "SYSTEM");
  const Config fresh = Config::from_variables(
      {{"JITCACHE_DIR", (m_dir.path() / "new" / "user").string()},
       {"JITCACHE_SYSTEM_PATH", (m_dir.path() / "cuda-sm_90.jcpkg").string()}});
  int compiles = 0;
  const auto compile = [&]() -> Expected<Entry> {
    ++compiles;
    return Entry{"cuda", "COMPILED"};
  };
  const auto hit_a = [&] {
    Cache cache(fresh);
    BuildInfo info;
    ASSERT_TRUE(cache.get_or_compile(cuda_key_for("a"), compile, &info));
    EXPECT_EQ(info.tier, "system");
  };
  for (int process = 0; process < 3; ++process)
    hit_a();
  EXPECT_FALSE(fs::exists(fresh.cache_dir / "data.mdb")) << "an environment made at exit";
  EXPECT_FALSE(fs::exists(fresh.cache_dir / "lock.mdb"));
  EXPECT_TRUE(fs::is_regular_file(fresh.cache_dir / "uses.log"));
  EXPECT_EQ(fs::status(fresh.cache_dir).permissions() & fs::perms::all, fs::perms::owner_all);
  {
    auto deferred = deferred_tier(fresh);
    ASSERT_TRUE(deferred);
    EXPECT_EQ(logged_system_hits(*deferred), 3u) << "read from the log";
  }
  {
    Cache cache(fresh);
    BuildInfo info;
    ASSERT_TRUE(cache.get_or_compile(cuda_key_for("b"), compile, &info));
    EXPECT_EQ(info.tier, "compile");
    EXPECT_TRUE(fs::is_regular_file(fresh.cache_dir / "data.mdb"));
    EXPECT_FALSE(fs::exists(fresh.cache_dir / "uses.log")) << "folded by the entry's write";
  }
  // The tier exists now, and is not opened for the counters either: a writable environment
  // closed in the process would leave its clean-end marker.
  fs::remove(fresh.cache_dir / "closed");
  hit_a();
  EXPECT_FALSE(fs::exists(fresh.cache_dir / "closed")) << "the environment was opened at exit";
  auto kept = open_user_store(fresh, true);
  ASSERT_TRUE(kept);
  auto counters = (*kept)->counters();
  ASSERT_TRUE(counters);
  EXPECT_EQ(counters->hits("cuda", "system"), 4u) << "each counted once";
  EXPECT_EQ(counters->get("cuda", Counter::compiles), 1u);
  EXPECT_EQ(compiles, 1);
}

// An empty data file (what a disk that filled while the tier was made leaves behind) is no tier
// to read: package-only processes count through the log and read it there, and leave the file
// as it was, as `jitcache stats` does; the first write makes the tier.
TEST_F(PackageTiersTest, AnEmptyDataFileIsReadAsNoTierAndLeftForTheFirstWrite) {
  const Config fresh = package_only(m_dir.path() / "user");
  std::ofstream(fresh.cache_dir / "data.mdb").close();
  hit_a_from_package(fresh);
  hit_a_from_package(fresh);
  EXPECT_EQ(fs::file_size(fresh.cache_dir / "data.mdb"), 0u) << "made into a tier by a read";
  EXPECT_FALSE(fs::exists(fresh.cache_dir / "lock.mdb"));
  auto deferred = deferred_tier(fresh);
  ASSERT_TRUE(deferred);
  EXPECT_EQ(logged_system_hits(*deferred), 2u) << "read from the log";
  ASSERT_TRUE(deferred->put(Digest::of("written"), Entry{"cuda", "COMPILED"}));
  EXPECT_GT(fs::file_size(fresh.cache_dir / "data.mdb"), 0u);
  auto after = deferred->counters();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->hits("cuda", "system"), 2u) << "folded by the write, counted once";
}

// The log stays bounded with no writer at all: a package-only process that finds it due a fold
// makes the environment and folds it.
TEST_F(PackageTiersTest, ALogDueAFoldIsFoldedByThePackageOnlyProcessThatFindsIt) {
  const Config fresh = package_only(m_dir.path() / "user");
  auto dir = CacheDir::open(fresh.cache_dir);
  ASSERT_TRUE(dir);
  UseNews big; // one record past the fold size: many counters of another backend
  for (int i = 0; std::uint64_t(i) * 24 < k_use_log_fold_at; ++i)
    big.counters.by_backend["opencl"]["counter " + std::to_string(i)] = 1;
  ASSERT_TRUE(append_use_log(*dir, big));
  ASSERT_GE(fs::file_size(fresh.cache_dir / "uses.log"), k_use_log_fold_at);
  hit_a_from_package(fresh);
  EXPECT_TRUE(fs::is_regular_file(fresh.cache_dir / "data.mdb"));
  EXPECT_LT(fs::exists(fresh.cache_dir / "uses.log") ? fs::file_size(fresh.cache_dir / "uses.log")
                                                     : 0,
            k_use_log_fold_at)
      << "folded";
  auto kept = open_user_store(fresh, true);
  ASSERT_TRUE(kept);
  auto counters = (*kept)->counters();
  ASSERT_TRUE(counters);
  EXPECT_EQ(counters->hits("cuda", "system"), 1u);
  EXPECT_EQ(counters->by_backend["opencl"].size(), big.counters.by_backend["opencl"].size());
}

// The user tier cannot be made when it is first written to (here a file took its place): the
// build still returns its kernel, and the tier is skipped with the one warning a Cache that
// cannot open it gives.
TEST_F(PackageTiersTest, AUserTierThatCannotBeMadeLaterIsSkippedWithOneWarning) {
  const fs::path user = m_dir.path() / "late";
  const Config fresh = Config::from_variables({{"JITCACHE_DIR", user.string()}});
  Cache cache(fresh);
  std::ofstream(user) << "not a directory";
  testing::internal::CaptureStderr();
  for (const char* source : {"x", "y"}) {
    BuildInfo info;
    auto built = cache.get_or_compile(
        cuda_key_for(source),
        [] {
          return Expected<Entry>(Entry{"cuda", "COMPILED"});
        },
        &info);
    ASSERT_TRUE(built) << source;
    EXPECT_EQ(built->entry.payload, "COMPILED");
  }
  cache.flush();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("continuing without the user tier"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "one warning: " << err;
  EXPECT_EQ(cache.session_stats().get("cuda", Counter::store_errors), 0u);
}

// A package copied over in place while a process has it mapped: reading past its new end raises
// SIGBUS, which makes each entry a damaged miss (warned about) instead of killing the process.
TEST_F(PackageTiersTest, APackageTruncatedUnderItsMappingIsADamagedMissNotACrash) {
  const Digest name = Digest::of("a record past the new end");
  package("cuda-sm_90.jcpkg", {"a", "b", "c"}, std::string(64 << 10, 'x'),
          {{name, std::string(16 << 10, 'r')}});
  const fs::path file = m_dir.path() / "cuda-sm_90.jcpkg";
  test::ChildProcess child([&] {
    auto store = PackageStore::open_system({file}, false);
    const auto holds = [&](const char* source) {
      auto got = store->get(cuda_key_for(source).digest);
      return got && got->has_value();
    };
    if (store->packages().empty() || !holds("a") || !store->record("cuda", name))
      return 2;
    fs::resize_file(file, 4096);
    int found = 0;
    for (const char* source : {"a", "b", "c"})
      found += holds(source);
    found += store->record("cuda", name).has_value();
    return found == 0 ? 0 : 3;
  });
  EXPECT_EQ(child.wait(), 0) << child.err();
  EXPECT_NE(child.err().find("faulted (SIGBUS"), std::string::npos) << child.err();
  EXPECT_NE(child.err().find(file.string() + ": reading it faulted"), std::string::npos)
      << "the record's warning: " << child.err();
}

} // namespace
} // namespace jitcache::detail
