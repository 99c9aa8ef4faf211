// `jitcache prune` and `jitcache stats` on a user tier filled through the store: eviction down to
// a size with the most recently used entries kept, compaction, and bad input.
#include "core/tiers/user/lmdb_store.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace jitcache {

using detail::LmdbStore;
namespace {

using test::run_cli;

Digest key(int i) {
  return Digest::of("pruned " + std::to_string(i));
}

nlohmann::json last_line(const std::string& out) {
  std::istringstream in(out);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty())
      last = line;
  return nlohmann::json::parse(last);
}

class PruneCommandTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto store = LmdbStore::open(tier(), false).value();
    for (int i = 0; i < 30; ++i)
      ASSERT_TRUE(store->put(key(i), Entry{"opencl", std::string(10 << 10, 'p'), {}, 0}));
    for (int i = 0; i < 5; ++i) // the oldest entries are the most recently used
      ASSERT_TRUE(store->get(key(i)).value());
  }
  std::filesystem::path tier() const { return dir.path() / "v1"; }
  std::map<std::string, std::string> env() const { return {{"JITCACHE_DIR", dir.path().string()}}; }
  test::TempDir dir;
};

TEST_F(PruneCommandTest, EvictsLeastRecentlyUsedDownToTheSizeAndCompacts) {
  auto r = run_cli({"prune", "--max-size", "100K", "--json"}, env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto pruned = last_line(r.out);
  EXPECT_EQ(pruned["max_size"], 100 << 10);
  EXPECT_LE(pruned["bytes"].get<std::uint64_t>(), 100u << 10);
  EXPECT_EQ(pruned["evicted"].get<int>() + pruned["entries"].get<int>(), 30);
  EXPECT_GT(pruned["evicted"].get<int>(), 20);
  EXPECT_EQ(pruned["compacted"], true);
  EXPECT_LT(pruned["file_bytes"], pruned["file_bytes_before"]);

  auto store = LmdbStore::open(tier(), true).value();
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(store->get(key(i)).value()) << "recently used entry " << i << " was evicted";
  store.reset();

  auto stats = run_cli({"stats", "--json"}, env());
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  const auto total = last_line(stats.out);
  EXPECT_EQ(total["evicted"], pruned["evicted"]);
  EXPECT_EQ(total["entries"], pruned["entries"]);
  EXPECT_EQ(total["file_bytes"], pruned["file_bytes"]);
  EXPECT_EQ(run_cli({"verify"}, env()).exit_code, 0);
}

TEST_F(PruneCommandTest, DoesNotCompactWhatAnotherProcessHasOpen) {
  auto user = test::process_holding_user_tier(tier());
  auto r = run_cli({"prune", "--max-size", "200K", "--json"}, env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto pruned = last_line(r.out);
  EXPECT_EQ(pruned["compacted"], false);
  EXPECT_NE(pruned["not_compacted"].get<std::string>().find("other processes"), std::string::npos);
  EXPECT_LE(pruned["bytes"].get<std::uint64_t>(), 200u << 10) << "evicting needs no exclusivity";
}

TEST_F(PruneCommandTest, ABadSizeIsAUsageError) {
  auto r = run_cli({"prune", "--max-size", "banana"}, env());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("jitcache: error: --max-size banana: not a size such as 10G, 512M or "
                        "4096\nevict least recently used entries",
                        0),
            0u)
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

} // namespace
} // namespace jitcache
