// The request shortcut of the memory tier: a repeated request is served while the files its key
// was built from stay as stamped, checked through inotify watches (stat calls only after an
// event), or by stat calls where the files cannot be watched.
#include "core/engine/handle_cache.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/files.hpp"
#include "tests/support/inotify_instances.hpp"
#include "tests/support/pretend_nfs.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>

namespace jitcache {

using detail::Filesystem;
namespace {
using test::pretend_nfs;
using test::write_file;

namespace fs = std::filesystem;
using detail::HandleCache;
using detail::RequestHash;

RequestHash request_of(std::string_view options, std::string_view source) {
  detail::RequestHasher hasher;
  hasher.add(options);
  hasher.add(source);
  return hasher.digest();
}

// A header found in link/ (a symlink to real/) after first/, where a header would shadow it:
// the files a key of `#include <a.h>` with -I first -I link is built from.
void make_tree(const fs::path& root) {
  write_file(root / "real/a.h", "int a;\n");
  fs::create_directories(root / "first");
  fs::create_directory_symlink(root / "real", root / "link");
}

// The stamps as a key built now from make_tree's files would have them: the header, and first/
// (where a shadowing header would appear).
std::string guards_of_tree(const fs::path& root) {
  return detail::encode_stamps({detail::stamp_of((root / "link/a.h").string()),
                                detail::stamp_of((root / "first").string())});
}

HandleCache::Loaded loaded() {
  return HandleCache::Loaded{std::make_shared<int>(7), BuildInfo{}};
}

class HandleCacheTest : public ::testing::Test {
protected:
  void SetUp() override { make_tree(dir.path()); }
  std::string guards() const { return guards_of_tree(dir.path()); }
  const RequestHash request = request_of("options", "source");
  test::TempDir dir;
};

// One case per kind of change, in a tree of its own: each must drop a shortcut that the cache
// has already checked once (so that, when watched, only the watches can tell). Every change
// changes a size or an inode: a stat call sees it too.
void expect_each_change_drops_the_shortcut(
    const std::function<std::unique_ptr<HandleCache>()>& make) {
  test::TempDir tree;
  const fs::path& root = tree.path();
  make_tree(root);
  const auto request = request_of("options", "source");
  const std::vector<std::pair<const char*, std::function<void()>>> changes{
      {"a header edited", [&] { write_file(root / "real/a.h", "int abc;\n"); }},
      {"a header created earlier in the include path",
       [&] { write_file(root / "first/a.h", "x\n"); }},
      {"the shadowing header removed", [&] { fs::remove(root / "first/a.h"); }},
      {"a header removed", [&] { fs::remove(root / "real/a.h"); }},
      {"a header put back", [&] { write_file(root / "real/a.h", "int a;\n"); }},
      {"a header replaced by a rename",
       [&] {
         write_file(root / "a.h.new", "int renamed;\n");
         fs::rename(root / "a.h.new", root / "real/a.h");
       }},
      {"the symlinked directory retargeted",
       [&] {
         write_file(root / "other/a.h", "int other;\n");
         fs::remove(root / "link");
         fs::create_directory_symlink(root / "other", root / "link");
       }},
      {"a directory on the path renamed",
       [&] {
         fs::rename(root / "other", root / "other.old");
         write_file(root / "other/a.h", "int moved;\n");
       }},
  };
  for (const auto& [what, change] : changes) {
    SCOPED_TRACE(what);
    auto handles = make();
    handles->alias(request, loaded(), guards_of_tree(root));
    ASSERT_TRUE(handles->find(request)) << "unchanged files";
    ASSERT_TRUE(handles->find(request));
    change();
    EXPECT_FALSE(handles->find(request));
    EXPECT_FALSE(handles->find(request)) << "a dropped shortcut stays dropped until aliased";
  }
}

// Finds `request` until a find makes no stat call (its files are watched), at most 64 times:
// how many proofs by stat that took.
std::uint64_t find_until_watched(const HandleCache& handles, const RequestHash& request) {
  for (int i = 0; i < 64; ++i) {
    const std::uint64_t before = handles.stat_checks();
    EXPECT_TRUE(handles.find(request)) << i;
    if (handles.stat_checks() == before)
      return before;
  }
  ADD_FAILURE() << "never watched";
  return handles.stat_checks();
}

TEST_F(HandleCacheTest, AWatchedShortcutIsServedWithoutStatCallsUntilAFileChanges) {
  HandleCache handles;
  handles.alias(request, loaded(), guards());
  const std::uint64_t proofs = find_until_watched(handles, request);
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(handles.find(request)) << i;
  EXPECT_EQ(handles.stat_checks(), proofs) << "proven by its watches";
  write_file(dir.path() / "real/unrelated.h", "int u;\n"); // in a watched directory, not stamped
  EXPECT_TRUE(handles.find(request));
  EXPECT_EQ(handles.stat_checks(), proofs) << "an event on another name is no reason to stat";
  write_file(dir.path() / "real/a.h", "int changed;\n");
  EXPECT_FALSE(handles.find(request));
  EXPECT_EQ(handles.stat_checks(), proofs + 1);
}

// Two files under the folders of a temporary directory: watching them costs several proofs by
// stat, so a request made once more (its first proof) stats them and sets no watch; one made
// over and over is watched once its proofs have cost about what the watches do.
TEST_F(HandleCacheTest, AShortcutOfFewFilesIsStatedUntilItsProofsCostWhatWatchingItsFoldersDoes) {
  const int before = test::inotify_instances();
  HandleCache handles;
  handles.alias(request, loaded(), guards());
  ASSERT_TRUE(handles.find(request));
  ASSERT_TRUE(handles.find(request));
  EXPECT_EQ(handles.stat_checks(), 2u) << "proven by stat";
  EXPECT_EQ(test::inotify_watches().size(), 0u) << "no watch set for a request repeated twice";
  // The folders the two stamps' paths go through, / included (ProvenStamps weighs three calls
  // per folder against a stat per file): link/a.h and first, in the temporary directory.
  std::size_t folders = 1; // link
  for (fs::path at = dir.path(); at != at.parent_path(); at = at.parent_path())
    ++folders;
  ++folders; // /
  const std::uint64_t proofs = find_until_watched(handles, request);
  EXPECT_EQ(proofs, (3 * folders + 1) / 2 + 1) << "watched at the proof after they cost as much";
  EXPECT_LE(test::inotify_instances(), before + 1);
}

TEST_F(HandleCacheTest, AnEventOnOneShortcutsFilesReprovesTheOthersByStatNotByRebuilding) {
  HandleCache handles;
  write_file(dir.path() / "b/b.h", "int b;\n");
  const auto other = request_of("options", "other source");
  handles.alias(request, loaded(), guards());
  handles.alias(other, loaded(),
                detail::encode_stamps({detail::stamp_of((dir.path() / "b/b.h").string())}));
  find_until_watched(handles, request);
  const std::uint64_t proofs = find_until_watched(handles, other);
  write_file(dir.path() / "b/b.h", "int bb;\n");
  EXPECT_FALSE(handles.find(other));
  EXPECT_TRUE(handles.find(request)) << "its own files are unchanged";
  EXPECT_EQ(handles.stat_checks(), proofs + 2);
  EXPECT_TRUE(handles.find(request));
  EXPECT_EQ(handles.stat_checks(), proofs + 2) << "watched again";
}

TEST_F(HandleCacheTest, EachChangeDropsAWatchedShortcut) {
  expect_each_change_drops_the_shortcut([] { return std::make_unique<HandleCache>(); });
}

TEST_F(HandleCacheTest, WhereFilesCannotBeWatchedEveryFindStatsThem) {
  {
    HandleCache handles(pretend_nfs); // another machine's writes raise no event here
    handles.alias(request, loaded(), guards());
    for (int i = 0; i < 5; ++i)
      ASSERT_TRUE(handles.find(request)) << i;
    EXPECT_EQ(handles.stat_checks(), 5u);
  }
  expect_each_change_drops_the_shortcut([] { return std::make_unique<HandleCache>(pretend_nfs); });
}

TEST_F(HandleCacheTest, ARelativePathIsResolvedFromTheCurrentDirectory) {
  write_file(dir.path() / "one/inc/h.h", "int one;\n");
  write_file(dir.path() / "two/inc/h.h", "int two;\n");
  const fs::path before = fs::current_path();
  fs::current_path(dir.path() / "one");
  HandleCache handles;
  handles.alias(request, loaded(), detail::encode_stamps({detail::stamp_of("inc/h.h")}));
  const bool held = bool(handles.find(request)) && bool(handles.find(request));
  fs::current_path(dir.path() / "two"); // chdir raises no event
  const bool elsewhere = bool(handles.find(request));
  fs::current_path(before);
  EXPECT_TRUE(held);
  EXPECT_FALSE(elsewhere) << "inc/h.h is another file from another directory";
}

// Every Cache's shortcuts and the process's proven stamps watch through one inotify instance:
// Linux gives a user 128 by default, and a node of many processes must not use them up.
TEST_F(HandleCacheTest, EveryCacheAndTheProcessWatchThroughOneInotifyInstance) {
  const int before = test::inotify_instances();
  const std::string stamps = guards();
  HandleCache first;
  HandleCache second;
  std::uint64_t proofs[2] = {};
  for (int i = 0; i < 2; ++i) {
    HandleCache& handles = i == 0 ? first : second;
    handles.alias(request, loaded(), stamps);
    proofs[i] = find_until_watched(handles, request);
  }
  const int watching = test::inotify_instances();
  EXPECT_LE(watching, before + 1);
  for (int i = 0; i < 64; ++i)
    ASSERT_TRUE(detail::ProvenStamps::process().hold(stamps));
  EXPECT_EQ(test::inotify_instances(), watching);
  EXPECT_EQ(first.stat_checks(), proofs[0]) << "each Cache counts its own proofs";
  EXPECT_EQ(second.stat_checks(), proofs[1]);
  EXPECT_EQ(proofs[0], proofs[1]);
  write_file(dir.path() / "real/a.h", "int changed;\n");
  EXPECT_FALSE(first.find(request));
  EXPECT_FALSE(second.find(request));
  EXPECT_FALSE(detail::ProvenStamps::process().hold(stamps));
}

TEST_F(HandleCacheTest, AForkedChildStatsAndLeavesTheParentsEventsToTheParent) {
  HandleCache handles;
  handles.alias(request, loaded(), guards());
  ASSERT_TRUE(handles.find(request));
  test::ChildProcess child([&] {
    const std::uint64_t before = handles.stat_checks();
    if (!handles.find(request) || handles.stat_checks() != before + 1)
      return 1; // the child must not use the parent's watches
    write_file(dir.path() / "real/a.h", "int child;\n");
    return handles.find(request) ? 2 : 0;
  });
  ASSERT_EQ(child.wait(), 0) << child.err();
  EXPECT_FALSE(handles.find(request)) << "the child's edit, seen by the parent's watches";
}

} // namespace
} // namespace jitcache
