// This program embeds a package of one tuning record (made at build time by
// make_tuning_package, as `jitcache export --backend tuning` writes one): lookup() finds it in
// the embedded tier with the user tier unwritable, above a system package's record of the same
// problem and below the user tier's own; `missing` counts it as tuned.
#include "tests/embed/tuning_sample.hpp"
#include "tests/embed/unwritable_cache.hpp"

#include "core/tiers/packages/package_format.hpp"
#include "core/tiers/user/lmdb_store.hpp"
#include "core/tuning/tuning_record.hpp"

#include <gtest/gtest.h>

namespace jitcache {

using detail::LmdbStore;
namespace {

using tuning::Origin;

const tuning::Problem k_problem = {{"N", "64"}};

// Trials that count what they prepare; each candidate runs at once.
tuning::Trials counting(int& prepared) {
  tuning::Trials trials;
  trials.candidates = {{{"TILE", "16"}}};
  trials.prepare = [&prepared](const tuning::Parameters&,
                               const std::string&) -> Expected<tuning::Trial> {
    ++prepared;
    return tuning::Trial{[]() -> Expected<void> { return {}; }, {}};
  };
  return trials;
}

TEST(EmbeddedTierTuning, TheLinkedRecordAnswersWithTheUserTierUnwritable) {
  test::UnwritableCache unwritable;
  const tuning::Choice choice = tuning::lookup(*unwritable.cache, test::embedded_family(),
                                               k_problem, test::embedded_device());
  EXPECT_EQ(choice.origin, Origin::embedded);
  EXPECT_EQ(choice.parameters.at("TILE"), "32");
  ASSERT_TRUE(choice.record);
  EXPECT_DOUBLE_EQ(choice.record->default_ms, 3.25);
  EXPECT_EQ(unwritable.cache->session_stats().hits(tuning::k_tuning_backend, "embedded"), 1u);
  // Another problem: no record, the declared default.
  EXPECT_EQ(tuning::lookup(*unwritable.cache, test::embedded_family(), {{"N", "65"}},
                           test::embedded_device())
                .origin,
            Origin::declared);
  EXPECT_TRUE(std::filesystem::is_regular_file(unwritable.blocker));
}

TEST(EmbeddedTierTuning, EmbeddedIsAboveSystemAndBelowTheUserTier) {
  test::TempDir dir;
  const auto system = dir.path() / "tuning-opencl-embedded device.jcpkg";
  const tuning::Record other = test::embedded_record("16");
  ASSERT_TRUE(detail::write_package(system, tuning::package_target(other),
                                    {{tuning::key_of(other), tuning::encode_record(other)}}));
  const auto user = dir.path() / "user";
  const auto config = [&](const char* mode) {
    return Config::from_variables({{"JITCACHE_DIR", user.string()},
                                   {"JITCACHE_SYSTEM_PATH", system.string()},
                                   {"JITCACHE_TUNE", mode}});
  };
  int prepared = 0;
  {
    Cache cache(config("missing"));
    const tuning::Choice choice = tuning::select(cache, test::embedded_family(), k_problem,
                                                 test::embedded_device(), counting(prepared));
    EXPECT_EQ(choice.origin, Origin::embedded);
    EXPECT_EQ(choice.parameters.at("TILE"), "32");
    EXPECT_EQ(prepared, 0); // a package's record counts as tuned
  }
  {
    auto store = LmdbStore::open(config("off").cache_dir, false);
    ASSERT_TRUE(store) << store.error().message;
    const tuning::Record own = test::embedded_record("64");
    ASSERT_TRUE((*store)->put_tuning(tuning::key_of(own), tuning::encode_record(own)));
  }
  Cache cache(config("off"));
  const tuning::Choice choice =
      tuning::lookup(cache, test::embedded_family(), k_problem, test::embedded_device());
  EXPECT_EQ(choice.origin, Origin::user);
  EXPECT_EQ(choice.parameters.at("TILE"), "64");
}

} // namespace
} // namespace jitcache
