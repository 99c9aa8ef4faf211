// When the pages are checked (core/tiers/user/lmdb_health): at open after an unclean end, before
// the first write after a clean one, never by a process that opens what another has open.
#include "core/tiers/user/lmdb_store.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/samples.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <fstream>

namespace jitcache {

using detail::LmdbStore;
namespace {
using test::has_aside_file;
using test::numbered_entry;
using test::numbered_key;

namespace fs = std::filesystem;
constexpr std::size_t k_lmdb_page = 4096;

class LmdbHealthTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto store = LmdbStore::open(dir(), false).value();
    for (int i = 0; i < 40; ++i)
      ASSERT_TRUE(store->put(numbered_key(i), numbered_entry(i, 5000)));
  }
  const fs::path& dir() const { return m_tmp.path(); }
  // The newest meta page (LMDB 0.9, 64-bit: its transaction id at byte 144).
  std::size_t newest_meta(std::fstream& file) {
    std::uint64_t txn[2];
    for (std::size_t m = 0; m < 2; ++m) {
      file.seekg(std::streamoff(m * k_lmdb_page + 144));
      file.read(reinterpret_cast<char*>(&txn[m]), 8);
    }
    return txn[0] < txn[1] ? k_lmdb_page : 0;
  }
  // Zeroes the root page of the main database (its number at byte 128 of the meta page).
  void damage_main_root() {
    std::fstream file(dir() / "data.mdb", std::ios::in | std::ios::out | std::ios::binary);
    std::uint64_t root = 0;
    file.seekg(std::streamoff(newest_meta(file) + 128));
    file.read(reinterpret_cast<char*>(&root), 8);
    file.seekp(std::streamoff(root * k_lmdb_page));
    file.write(std::string(k_lmdb_page, '\0').data(), k_lmdb_page);
  }
  // Damage that only the page check sees (LMDB never reads it): the main database's entry
  // count (byte 120 of the meta page).
  void damage_entry_count() {
    std::fstream file(dir() / "data.mdb", std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(std::streamoff(newest_meta(file) + 120));
    file.put('\x7f');
  }
  test::TempDir m_tmp;
};

TEST_F(LmdbHealthTest, ACleanEndLeavesItsMarkerAFirstWriteTakesItAway) {
  EXPECT_TRUE(fs::exists(dir() / "closed"));
  {
    auto store = LmdbStore::open(dir(), false).value();
    EXPECT_TRUE(fs::exists(dir() / "closed")) << "open: reading cannot leave it half written";
    ASSERT_TRUE(store->put(numbered_key(60), numbered_entry(60, 5000)));
    EXPECT_FALSE(fs::exists(dir() / "closed")) << "a write: an end now would be unclean";
    auto reader = LmdbStore::open(dir(), true).value();
  }
  EXPECT_TRUE(fs::exists(dir() / "closed"));
}

TEST_F(LmdbHealthTest, AfterAnUncleanEndDamageIsMovedAsideAtOpen) {
  { // killed after a write: no clean end
    test::ChildProcess writer([&] {
      auto store = LmdbStore::open(dir(), false);
      const bool wrote = store && (*store)->put(numbered_key(50), numbered_entry(50, 5000));
      test::ChildProcess::tell_parent(wrote ? "wrote" : "failed");
      ::pause();
      return 0;
    });
    ASSERT_EQ(writer.next_message(), "wrote");
  }
  EXPECT_FALSE(fs::exists(dir() / "closed"));
  damage_main_root();
  testing::internal::CaptureStderr();
  auto store = LmdbStore::open(dir(), false);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_TRUE(has_aside_file(dir()));
  EXPECT_NE(err.find("is damaged (page "), std::string::npos) << err;
  EXPECT_FALSE((*store)->get(numbered_key(0)).value());
  EXPECT_TRUE((*store)->put(numbered_key(0), numbered_entry(0, 5000)));
}

TEST_F(LmdbHealthTest, DamageAfterACleanEndIsNeverWrittenIntoAndMovedAsideNextOpen) {
  damage_entry_count();
  {
    auto store = LmdbStore::open(dir(), false).value();
    EXPECT_FALSE(has_aside_file(dir())) << "a clean end: not checked at open";
    testing::internal::CaptureStderr();
    auto put = (*store).put(numbered_key(100), numbered_entry(100, 5000));
    auto again = (*store).put(numbered_key(101), numbered_entry(101, 5000));
    const std::string err = testing::internal::GetCapturedStderr();
    ASSERT_FALSE(put);
    EXPECT_EQ(put.error().code, ErrorCode::corrupt);
    EXPECT_EQ(again.error().code, ErrorCode::corrupt);
    EXPECT_NE(err.find("its database says"), std::string::npos) << err;
    EXPECT_EQ(err.find("is damaged"), err.rfind("is damaged")) << "one warning: " << err;
  }
  EXPECT_FALSE(fs::exists(dir() / "closed"));
  auto store = LmdbStore::open(dir(), false).value();
  EXPECT_TRUE(has_aside_file(dir()));
  EXPECT_TRUE(store->put(numbered_key(100), numbered_entry(100, 5000)));
}

} // namespace
} // namespace jitcache
