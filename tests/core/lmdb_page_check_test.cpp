// The LMDB page verifier: every healthy file jitcache writes passes (after many transactions
// of puts, removals, records, counters and evictions), and each kind of damage is found with
// the page it is on.
#include "core/tiers/user/lmdb_page_check.hpp"
#include "core/tiers/user/lmdb_store.hpp"

#include "tests/support/files.hpp"
#include "tests/support/samples.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

namespace jitcache {

using detail::check_lmdb_pages;
using detail::LmdbStore;
using detail::PageCheck;
namespace {
using test::numbered_key;
using test::read_file;
using test::write_file;

namespace fs = std::filesystem;

constexpr std::size_t k_page = 4096;

// A user tier of `count` entries, small (inline) and big (overflow pages), churned: entries
// replaced and removed, records and counters written, so that the free list is not empty.
void fill(const fs::path& dir, int count, unsigned seed) {
  std::mt19937 rng(seed);
  LmdbStore::Options options;
  options.max_size = 3u << 20; // evictions too
  auto store = LmdbStore::open(dir, false, options);
  ASSERT_TRUE(store) << store.error().message;
  for (int i = 0; i < count; ++i) {
    const std::size_t bytes = rng() % 3 == 0 ? 100 + rng() % 1500 : 3000 + rng() % 40000;
    ASSERT_TRUE((*store)->put(numbered_key(i),
                              Entry{"opencl", std::string(bytes, char('a' + i % 26)), {}, 0}));
    if (rng() % 4 == 0) {
      ASSERT_TRUE((*store)->remove(numbered_key(int(rng() % (i + 1)))));
    }
    if (rng() % 8 == 0) {
      ASSERT_TRUE(
          (*store)->put_records({{Digest::of(std::to_string(i)), std::string(rng() % 3000, 'r')}}));
    }
    if (rng() % 8 == 0) {
      Stats delta;
      delta.add("opencl", Counter::compiles, 1);
      ASSERT_TRUE((*store)->add_counters(delta));
    }
  }
}

class PageCheckTest : public ::testing::Test {
protected:
  void SetUp() override {
    fill(m_tmp.path(), 200, 7);
    m_bytes = read_file(data());
    ASSERT_GT(m_bytes.size(), 50 * k_page);
  }
  fs::path data() const { return m_tmp.path() / "data.mdb"; }
  PageCheck check_with(const std::string& bytes) {
    write_file(data(), bytes);
    return check_lmdb_pages(data());
  }
  test::TempDir m_tmp;
  std::string m_bytes;
};

TEST(PageCheck, HealthyFilesPassAfterManyTransactions) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    test::TempDir tmp;
    fill(tmp.path(), 120 * seed, seed);
    const PageCheck check = check_lmdb_pages(tmp.path() / "data.mdb");
    EXPECT_TRUE(check.ok()) << "seed " << seed << ": " << check.problem;
    EXPECT_GT(check.entries, 0u);
    EXPECT_GT(check.txnid, 0u);
    const PageCheck trees = check_lmdb_pages(tmp.path() / "data.mdb", {check.txnid, false});
    EXPECT_TRUE(trees.ok()) << trees.problem;
    EXPECT_LT(trees.pages_read, check.pages_read);
  }
}

TEST(PageCheck, AMissingFileIsUncheckedAnEmptyOneIsNew) {
  test::TempDir tmp;
  EXPECT_EQ(check_lmdb_pages(tmp.path() / "data.mdb").verdict, PageCheck::Verdict::unchecked);
  write_file(tmp.path() / "data.mdb", "");
  EXPECT_TRUE(check_lmdb_pages(tmp.path() / "data.mdb").ok()); // LMDB starts a fresh one
}

TEST_F(PageCheckTest, FindsZeroedMetaPages) {
  for (std::size_t meta : {0, 1}) {
    std::string bytes = m_bytes;
    std::fill_n(bytes.begin() + meta * k_page, k_page, '\0');
    const PageCheck check = check_with(bytes);
    EXPECT_TRUE(check.damaged());
    EXPECT_EQ(check.page, meta) << check.problem;
  }
}

TEST_F(PageCheckTest, FindsTruncation) {
  const PageCheck check = check_with(m_bytes.substr(0, m_bytes.size() / 2 + 100));
  EXPECT_TRUE(check.damaged());
  EXPECT_NE(check.problem.find("the file has"), std::string::npos) << check.problem;
}

TEST_F(PageCheckTest, FindsTheMiddleThirdOverwritten) {
  for (char fill : {'\xff', '\x5a'}) {
    std::string bytes = m_bytes;
    std::fill(bytes.begin() + bytes.size() / 3, bytes.begin() + 2 * bytes.size() / 3, fill);
    EXPECT_TRUE(check_with(bytes).damaged());
  }
}

// The newest meta page's main database (LMDB 0.9, 64-bit): entries at byte 120, root at 128;
// the transaction id at 144.
std::size_t newest_meta(const std::string& bytes) {
  std::uint64_t txn[2];
  std::memcpy(&txn[0], bytes.data() + 144, 8);
  std::memcpy(&txn[1], bytes.data() + k_page + 144, 8);
  return txn[0] < txn[1] ? k_page : 0;
}

TEST_F(PageCheckTest, FindsAZeroedRootPageByItsNumber) {
  std::uint64_t root = 0;
  std::memcpy(&root, m_bytes.data() + newest_meta(m_bytes) + 128, 8);
  std::string bytes = m_bytes;
  std::fill_n(bytes.begin() + root * k_page, k_page, '\0');
  const PageCheck check = check_with(bytes);
  EXPECT_TRUE(check.damaged());
  EXPECT_EQ(check.page, root) << check.problem;
}

TEST_F(PageCheckTest, FindsStatisticsThatDisagreeWithTheTree) {
  std::string bytes = m_bytes;
  bytes[newest_meta(m_bytes) + 120] ^= 1; // the main database's entry count
  const PageCheck check = check_with(bytes);
  EXPECT_TRUE(check.damaged());
  EXPECT_NE(check.problem.find("its database says"), std::string::npos) << check.problem;
}

TEST_F(PageCheckTest, RandomDamageNeverCrashesTheChecker) {
  std::mt19937 rng(11);
  std::size_t found = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes = m_bytes;
    const std::size_t at = rng() % bytes.size(), length = 1 + rng() % (8 * k_page);
    for (std::size_t i = at; i < std::min(bytes.size(), at + length); ++i)
      bytes[i] = char(rng());
    found += check_with(bytes).damaged();
  }
  // Most of this file is values (checked by their entries' checksums, not here) and free pages.
  EXPECT_GT(found, 20u);
}

} // namespace
} // namespace jitcache
