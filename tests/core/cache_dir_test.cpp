// CacheDir: files inside the cache directory are opened, made, renamed and removed relative to
// it, never through a symbolic link, never a file with a second link or a FIFO.
#include "core/tiers/user/cache_dir.hpp"

#include "tests/support/files.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

namespace jitcache {

using detail::CacheDir;
namespace {
using test::read_file;

namespace fs = std::filesystem;

class CacheDirTest : public ::testing::Test {
protected:
  void SetUp() override { std::ofstream(outside.path() / "victim") << "precious"; }
  CacheDir cache() const { return CacheDir::open(dir.path()).value(); }
  test::TempDir dir;
  test::TempDir outside;
};

TEST_F(CacheDirTest, MakesAFileOnceAndOpensItAfterwards) {
  bool created = false;
  const int fd = cache().open_file("f", O_RDWR | O_CREAT, &created).value();
  EXPECT_TRUE(created);
  ::close(fd);
  EXPECT_EQ(fs::status(dir.path() / "f").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  const int again = cache().open_file("f", O_RDWR | O_CREAT, &created).value();
  EXPECT_FALSE(created);
  ::close(again);
  auto absent = cache().open_file("g", O_RDONLY);
  ASSERT_FALSE(absent);
  EXPECT_FALSE(fs::exists(dir.path() / "g")) << "nothing made without O_CREAT";
}

TEST_F(CacheDirTest, NeverOpensThroughALinkNorAFileWithASecondLinkNorAFifo) {
  fs::create_symlink(outside.path() / "victim", dir.path() / "symlink");
  fs::create_symlink(outside.path() / "absent", dir.path() / "dangling");
  fs::create_hard_link(outside.path() / "victim", dir.path() / "hardlink");
  ASSERT_EQ(::mkfifo((dir.path() / "fifo").c_str(), 0600), 0);
  struct Case {
    const char* name;
    const char* message;
  };
  for (const Case& c :
       {Case{"symlink", "is a symbolic link"}, Case{"dangling", "is a symbolic link"},
        Case{"hardlink", "has more than one link"}, Case{"fifo", "is not a regular file"}}) {
    auto fd = cache().open_file(c.name, O_RDWR | O_CREAT);
    ASSERT_FALSE(fd) << c.name;
    EXPECT_NE(fd.error().message.find(c.message), std::string::npos) << fd.error().message;
  }
  EXPECT_EQ(read_file(outside.path() / "victim"), "precious");
  EXPECT_FALSE(fs::exists(outside.path() / "absent"));
}

TEST_F(CacheDirTest, RemovesAndRenamesLinksNotWhatTheyPointTo) {
  fs::create_symlink(outside.path() / "victim", dir.path() / "link");
  ASSERT_TRUE(cache().rename("link", "moved"));
  EXPECT_TRUE(fs::is_symlink(dir.path() / "moved"));
  ASSERT_TRUE(cache().remove("moved"));
  EXPECT_EQ(read_file(outside.path() / "victim"), "precious");
  EXPECT_FALSE(cache().remove("moved"));
}

TEST_F(CacheDirTest, ADirectoryThatIsALinkIsNotOpened) {
  fs::create_directory_symlink(outside.path(), dir.path() / "link");
  auto opened = CacheDir::open(dir.path() / "link");
  ASSERT_FALSE(opened);
  EXPECT_NE(opened.error().message.find("is a symbolic link"), std::string::npos);
  auto sub = cache().subdir("link", true);
  ASSERT_FALSE(sub);
  EXPECT_NE(sub.error().message.find("is a symbolic link"), std::string::npos);
  ASSERT_TRUE(cache().subdir("made", true));
  EXPECT_EQ(fs::status(dir.path() / "made").permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_FALSE(cache().subdir("absent", false));
  EXPECT_FALSE(fs::exists(dir.path() / "absent"));
}

} // namespace
} // namespace jitcache
