#include "tests/support/backend_cases.hpp"

#include "core/engine/tier_set.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/packages/package_format.hpp"
#include "core/tiers/packages/package_target.hpp"
#include "core/tiers/user/lmdb_store.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/faulty_user_tier.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace jitcache::test {

using detail::encode_entry;
using detail::LmdbStore;

namespace {

namespace fs = std::filesystem;

Config config_of(const fs::path& dir, bool read_only = false,
                 std::map<std::string, std::string> variables = {}) {
  // wait: the entry is stored when the Cache is gone (tests/opencl/store_mode_test: detach).
  variables.emplace("JITCACHE_DIR", dir.string());
  variables.emplace("JITCACHE_OPENCL_STORE", "wait");
  if (read_only)
    variables.emplace("JITCACHE_READONLY", "1");
  return Config::from_variables(variables);
}

// The counters of one Cache's session that the table checks.
struct Counts {
  std::uint64_t memory = 0, user = 0, misses = 0, compiles = 0, rejected = 0, errors = 0;
};

void expect_counts(const Cache& cache, const std::string& backend, const Counts& want,
                   const char* step) {
  const Stats stats = cache.session_stats();
  EXPECT_EQ(stats.hits(backend, "memory"), want.memory) << step;
  EXPECT_EQ(stats.hits(backend, "user"), want.user) << step;
  EXPECT_EQ(stats.get(backend, Counter::misses), want.misses) << step;
  EXPECT_EQ(stats.get(backend, Counter::compiles), want.compiles) << step;
  EXPECT_EQ(stats.get(backend, Counter::rejected), want.rejected) << step;
  EXPECT_EQ(stats.get(backend, Counter::compile_errors), want.errors) << step;
}

// Stores a binary the backend must refuse, under the sample's key (with the right fields).
void store_garbage(BackendCase& backend, const Config& config) {
  auto key = backend.key(config);
  ASSERT_TRUE(key) << key.error().message;
  Cache writer(config);
  writer.store(*key, Entry{backend.backend(), "this is not a binary"});
}

std::string stored_payload(BackendCase& backend, const fs::path& dir) {
  auto key = backend.key(config_of(dir));
  auto store = LmdbStore::open(dir / "v1", true);
  if (!key || !store)
    return "(unreadable)";
  auto got = (*store)->get(key->digest);
  return got && *got ? (**got).payload : "(none)";
}

std::size_t warnings_in(const std::string& err) {
  std::size_t n = 0;
  for (std::size_t at = err.find("jitcache: warn"); at != std::string::npos;
       at = err.find("jitcache: warn", at + 1))
    ++n;
  return n;
}

} // namespace

void expect_counter_table(BackendCase& backend) {
  const std::string name = backend.backend();
  TempDir dir;
  const Config config = config_of(dir.path());
  {
    Cache cache(config);
    auto miss = backend.build(cache);
    ASSERT_TRUE(miss) << miss.error().message;
    EXPECT_EQ(miss->outcome, Outcome::miss);
    EXPECT_EQ(miss->tier, "compile");
    expect_counts(cache, name, {0, 0, 1, 1, 0, 0}, "miss");
    auto again = backend.build(cache);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->tier, "memory");
    expect_counts(cache, name, {1, 0, 1, 1, 0, 0}, "memory hit");
  }
  {
    Cache cache(config);
    auto hit = backend.build(cache);
    ASSERT_TRUE(hit) << hit.error().message;
    EXPECT_EQ(hit->tier, "user");
    expect_counts(cache, name, {0, 1, 0, 0, 0, 0}, "user hit");
  }
  store_garbage(backend, config);
  {
    Cache cache(config);
    auto rebuilt = backend.build(cache);
    ASSERT_TRUE(rebuilt) << rebuilt.error().message;
    EXPECT_EQ(rebuilt->outcome, Outcome::miss);
    EXPECT_NE(rebuilt->note.find("rejected"), std::string::npos) << rebuilt->note;
    expect_counts(cache, name, {0, 0, 1, 1, 1, 0}, "refused, writable");
  }
  {
    Cache cache(config);
    auto hit = backend.build(cache);
    ASSERT_TRUE(hit) << hit.error().message;
    EXPECT_EQ(hit->tier, "user") << "the rebuilt binary replaced the refused one";
    expect_counts(cache, name, {0, 1, 0, 0, 0, 0}, "hit after the rebuild");
  }
  store_garbage(backend, config);
  for (const char* step : {"refused, read-only", "refused, read-only, again"}) {
    Cache cache(config_of(dir.path(), true));
    auto rebuilt = backend.build(cache);
    ASSERT_TRUE(rebuilt) << rebuilt.error().message;
    EXPECT_EQ(rebuilt->outcome, Outcome::miss);
    expect_counts(cache, name, {0, 0, 1, 1, 1, 0}, step);
  }
  EXPECT_EQ(stored_payload(backend, dir.path()), "this is not a binary")
      << "a read-only cache is never written";
  {
    Cache cache(config);
    auto broken = backend.build_broken(cache);
    ASSERT_FALSE(broken);
    EXPECT_EQ(broken.error().code, ErrorCode::compile_failed);
    EXPECT_FALSE(broken.error().log.empty());
    expect_counts(cache, name, {0, 0, 0, 0, 0, 1}, "compile error");
  }
}

void expect_packages_first(BackendCase& backend) {
  const std::string name = backend.backend();
  TempDir made, user, packages;
  Entry stored; // this machine's entry, as a machine with another compiler would have made it
  Digest own;
  {
    Cache cache(config_of(made.path()));
    auto built = backend.build(cache);
    ASSERT_TRUE(built) << built.error().message;
    cache.flush();
    own = built->key;
    auto store = LmdbStore::open(made.path() / "v1", true);
    ASSERT_TRUE(store) << store.error().message;
    auto got = (*store)->get(own);
    ASSERT_TRUE(got && *got) << "the built entry is in the user tier";
    stored = **got;
  }
  const fs::path package = packages.path() / "another-compiler.jcpkg";
  const Config config = config_of(user.path(), false, {{"JITCACHE_SYSTEM_PATH", package.string()}});
  auto other = backend.key_by_another_compiler(config);
  ASSERT_TRUE(other) << other.error().message;
  ASSERT_NE(other->digest, own) << "the compiler is part of the key";
  stored.key_fields = other->stored_fields;
  ASSERT_TRUE(detail::write_package(package, detail::target_of(name, other->fields),
                                    {{other->digest, encode_entry(other->digest, stored)}}));

  Cache cache(config);
  auto served = backend.build(cache);
  ASSERT_TRUE(served) << served.error().message;
  EXPECT_EQ(served->outcome, Outcome::hit);
  EXPECT_EQ(served->tier, "system");
  EXPECT_EQ(served->key, other->digest);
  // A request's persistent hit is not copied into the memory tier of entries: a loader's
  // handles answer the repeat, and for an offline compile the package answers it again.
  auto again = backend.build(cache);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->tier, backend.loads() ? "memory" : "system");
  EXPECT_EQ(again->key, other->digest);
  const Stats stats = cache.session_stats();
  EXPECT_EQ(stats.hits(name, "system"), backend.loads() ? 1u : 2u);
  EXPECT_EQ(stats.get(name, Counter::misses), 0u);
  EXPECT_EQ(stats.get(name, Counter::compiles), 0u);
  EXPECT_EQ(stats.get(name, Counter::corrupt), 0u);
}

void expect_remembered_key_evicted(BackendCase& backend) {
  const std::string name = backend.backend();
  TempDir dir;
  const Config config = config_of(dir.path());
  Digest key;
  for (Outcome outcome : {Outcome::miss, Outcome::hit}) { // the hit remembers the key
    Cache cache(config);
    auto built = backend.build(cache);
    ASSERT_TRUE(built) << built.error().message;
    EXPECT_EQ(built->outcome, outcome);
    key = built->key;
  }
  {
    Cache cache(config);
    auto full = backend.key(config);
    ASSERT_TRUE(full) << full.error().message;
    ASSERT_EQ(full->digest, key);
    cache.evict(*full);
  }
  for (Outcome outcome : {Outcome::miss, Outcome::hit}) {
    Cache cache(config);
    auto built = backend.build(cache);
    ASSERT_TRUE(built) << built.error().message;
    EXPECT_EQ(built->outcome, outcome);
    EXPECT_EQ(built->key, key);
    EXPECT_EQ(cache.session_stats().get(name, Counter::compiles),
              outcome == Outcome::miss ? 1u : 0u);
  }
}

void expect_faults_contained(const std::function<std::unique_ptr<BackendCase>()>& make) {
  using Op = FaultyUserTier::Op;
  constexpr int k_built = 0, k_not_reached = 3, k_failed = 2;
  for (const bool hit : {false, true}) {
    for (const Op op : {Op::visit, Op::visit_record, Op::put, Op::put_counted, Op::put_records,
                        Op::add_counters, Op::remove}) {
      TempDir dir;
      ChildProcess child([&] {
        auto backend = make();
        const Config config = config_of(dir.path());
        if (hit) {
          Cache warm(config);
          if (!backend->build(warm))
            return k_failed;
        }
        auto user = LmdbStore::open(dir.path() / "v1", false);
        if (!user)
          return k_failed;
        auto faulty = std::make_shared<FaultyUserTier>(*user);
        faulty->fail_from(op, 1);
        {
          Cache cache(config, detail::TierSet::of_user(faulty));
          auto built = backend->build(cache);
          if (!built) {
            std::fprintf(stderr, "build failed: %s\n", built.error().message.c_str());
            return k_failed;
          }
        }
        return faulty->calls(op) > 0 ? k_built : k_not_reached;
      });
      const int status = child.wait();
      const std::string what = std::string(hit ? "hit" : "miss") + " path, operation " +
                               std::to_string(static_cast<int>(op));
      ASSERT_TRUE(status == k_built || status == k_not_reached) << what << "\n" << child.err();
      EXPECT_EQ(warnings_in(child.err()), status == k_built ? 1u : 0u) << what << "\n"
                                                                       << child.err();
    }
  }
  // The tier cannot even be opened: the cache directory is a file.
  TempDir dir;
  std::ofstream(dir.path() / "file") << "x";
  ChildProcess child([&] {
    auto backend = make();
    Cache cache(config_of(dir.path() / "file"));
    return backend->build(cache) ? k_built : k_failed;
  });
  EXPECT_EQ(child.wait(), k_built) << child.err();
  EXPECT_EQ(warnings_in(child.err()), 1u) << child.err();
}

} // namespace jitcache::test
