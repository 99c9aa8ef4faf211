// Sets of stamps proven once by stat and then by inotify watches (ProvenStamps): a process that
// builds many keys on the same headers stats them a few times, not once per key. What a change
// to any of them must do, wherever it is made, and what a set proven once must not pay.
#include "core/engine/proven_stamps.hpp"
#include "core/key/file_stamp.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/file_times.hpp"
#include "tests/support/files.hpp"
#include "tests/support/hostile_trials.hpp"
#include "tests/support/inotify_instances.hpp"
#include "tests/support/pretend_nfs.hpp"
#include "tests/support/temp_dir.hpp"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace jitcache {
namespace {
using test::pretend_nfs;
using test::write_file;

namespace fs = std::filesystem;
using detail::Filesystem;
using detail::ProvenStamps;

// A toolkit-like tree: 12 folders of 25 headers under a folder reached through a symlink (as
// /usr/local/cuda is), and the stamps a key of all of them has: every header through the link,
// and an absent candidate's folder in front of them (where a shadowing header would appear).
struct Tree {
  explicit Tree(const fs::path& root) : root(root) {
    for (int d = 0; d < 12; ++d)
      for (int h = 0; h < 25; ++h)
        write_file(root / "real" / ("d" + std::to_string(d)) / ("h" + std::to_string(h) + ".h"),
                   "int v" + std::to_string(h) + ";\n");
    fs::create_directories(root / "first");
    fs::create_directory_symlink(root / "real", root / "link");
  }
  fs::path header(int d, int h) const {
    return root / "link" / ("d" + std::to_string(d)) / ("h" + std::to_string(h) + ".h");
  }
  std::string stamps() const {
    std::vector<detail::FileStamp> out{detail::stamp_of((root / "first").string())};
    for (int d = 0; d < 12; ++d)
      for (int h = 0; h < 25; ++h)
        out.push_back(detail::stamp_of(header(d, h).string()));
    return detail::encode_stamps(out);
  }
  fs::path root;
};

class ProvenStampsTest : public ::testing::Test {
protected:
  test::TempDir dir;
  Tree tree{dir.path()};
  const std::string stamps = tree.stamps();
};

TEST_F(ProvenStampsTest, ASetIsWatchedFromItsSecondProofAndThenProvenWithoutStatCalls) {
  ProvenStamps proven(detail::probe_filesystem, 1);
  const int before = test::inotify_instances();
  ASSERT_TRUE(proven.hold(stamps));
  EXPECT_EQ(test::inotify_instances(), before) << "a set proven once in a process pays no watch";
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(proven.hold(stamps)) << i;
  EXPECT_EQ(proven.stat_checks(), 2u) << "stat'ed at the first proof and when watched";
  write_file(dir.path() / "real/d3/unrelated.h", "int u;\n"); // in a watched folder, not stamped
  EXPECT_TRUE(proven.hold(stamps));
  EXPECT_EQ(proven.stat_checks(), 2u) << "an event on another name is no reason to stat";
}

// Watching costs about three calls per folder on a set's paths: weighed (as the process's own
// and every Cache's are), a set of many files in few folders is watched at its second proof, and
// one file deep down only once its proofs by stat have made as many calls as its folders' watches.
TEST_F(ProvenStampsTest, WeighedASetIsWatchedOnceItsProofsHaveCostWhatWatchingItsFoldersDoes) {
  const auto watch = std::make_shared<ProvenStamps::Watch>(detail::probe_filesystem);
  ProvenStamps proven(watch, 1, true);
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(proven.hold(stamps));
  EXPECT_EQ(proven.stat_checks(), 2u)
      << "301 files in a score of folders: watched at the second proof";

  fs::path deep = dir.path();
  for (int d = 0; d < 8; ++d)
    deep /= "d" + std::to_string(d);
  write_file(deep / "k.h", "int k;\n");
  const std::string one = detail::encode_stamps({detail::stamp_of((deep / "k.h").string())});
  std::uint64_t folders = 1; // /
  for (fs::path at = deep; at != at.parent_path(); at = at.parent_path())
    ++folders;
  const std::uint64_t before = proven.stat_checks();
  for (int i = 0; i < 200; ++i)
    ASSERT_TRUE(proven.hold(one)) << i;
  EXPECT_EQ(proven.stat_checks() - before, 3 * folders + 1)
      << "proven by stat " << 3 * folders << " times, then watched (by a proof that stats)";
  write_file(deep / "k.h", "int kk;\n");
  EXPECT_FALSE(proven.hold(one)) << "and the watch sees a change";
}

TEST(ProvenStamps, TheExtentOfASetCountsEachFolderOnce) {
  const auto stamp = [](const char* path) {
    detail::FileStamp s;
    s.path = path;
    return s;
  };
  const auto extent = detail::extent_of_stamps(detail::encode_stamps(
      {stamp("/usr/include/a.h"), stamp("/usr/include/sys/b.h"), stamp("/usr/include/sys/c.h"),
       stamp("/etc/ld.so.cache"), stamp("/top"), stamp("inc/d.h"), stamp("e.h")}));
  ASSERT_TRUE(extent);
  EXPECT_EQ(extent->files, 7u);
  // /, /usr, /usr/include, /usr/include/sys, /etc; inc and . (relative: from the current one)
  EXPECT_EQ(extent->folders, 7u);
  EXPECT_EQ(detail::extent_of_stamps(detail::encode_stamps({}))->folders, 0u);
  const std::string encoded = detail::encode_stamps({stamp("/a/b.h")});
  for (std::size_t cut = 0; cut < encoded.size(); ++cut)
    EXPECT_FALSE(detail::extent_of_stamps(encoded.substr(0, cut))) << "cut at " << cut;
}

// Random sets (1 to 24 files and an absent candidate, in 1 to 5 folders 1 to 8 deep), each
// proven 1 to 12 times (weighed: some are watched by then, some still stat'ed), then one random
// change to what the set depends on: its next two proofs fail, whichever way it was being proven,
// and a set beside it that the change does not concern still holds. Every change is made after
// the files' status change time has ticked past, so that a stat sees it too.
TEST(ProvenStamps, RandomSetsSeeEveryChangeWhetherWatchedOrNot) {
  const int trials = test::hostile_trials(200);
  const std::uint64_t seed = test::hostile_seed(31337);
  std::cout << "stamp sets: " << trials << " trials, JITCACHE_HOSTILE_SEED=" << seed << "\n";
  const char* const kinds[] = {"rewritten, same size",  "removed",
                               "the candidate created", "a folder on the path renamed",
                               "mode changed",          "replaced by a rename"};
  int watched = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::mt19937_64 random(seed + static_cast<std::uint64_t>(trial));
    const auto pick = [&](int low, int high) {
      return std::uniform_int_distribution<int>(low, high)(random);
    };
    test::TempDir dir;
    std::vector<fs::path> folders;
    for (int f = pick(1, 5); f > 0; --f) {
      fs::path folder = dir.path() / ("f" + std::to_string(f));
      for (int depth = pick(1, 8); depth > 1; --depth)
        folder /= "d" + std::to_string(depth);
      fs::create_directories(folder);
      folders.push_back(folder);
    }
    std::vector<fs::path> files;
    for (int i = pick(1, 24); i > 0; --i) {
      const fs::path file =
          folders[pick(0, static_cast<int>(folders.size()) - 1)] / ("h" + std::to_string(i) + ".h");
      write_file(file, "int v" + std::to_string(i) + ";\n");
      files.push_back(file);
    }
    const fs::path absent = folders[pick(0, static_cast<int>(folders.size()) - 1)] / "shadow.h";
    write_file(dir.path() / "beside" / "b.h", "int b;\n");
    std::vector<detail::FileStamp> stamps{detail::stamp_of(absent.string())};
    for (const fs::path& file : files)
      stamps.push_back(detail::stamp_of(file.string()));
    const std::string set = detail::encode_stamps(stamps);
    const std::string beside =
        detail::encode_stamps({detail::stamp_of((dir.path() / "beside" / "b.h").string())});
    test::until_ctime_passes(files.back(), dir.path() / "beside" / "tick");

    const auto watch = std::make_shared<ProvenStamps::Watch>(detail::probe_filesystem);
    ProvenStamps proven(watch, 1, true);
    const int proofs = pick(1, 12);
    for (int i = 0; i < proofs; ++i) {
      ASSERT_TRUE(proven.hold(set)) << "trial " << trial;
      ASSERT_TRUE(proven.hold(beside)) << "trial " << trial;
    }
    const std::uint64_t before = proven.stat_checks();
    ASSERT_TRUE(proven.hold(set));
    watched += proven.stat_checks() == before ? 1 : 0;

    const int kind = pick(0, 5);
    const fs::path& file = files[pick(0, static_cast<int>(files.size()) - 1)];
    SCOPED_TRACE(std::string("trial ") + std::to_string(trial) + ", " + kinds[kind] + ", " +
                 std::to_string(proofs) + " proofs before, " + file.string());
    switch (kind) {
    case 0: {
      std::string text = test::read_file(file);
      text[4] = 'w';
      write_file(file, text);
      break;
    }
    case 1:
      fs::remove(file);
      break;
    case 2:
      write_file(absent, "int s;\n");
      break;
    case 3:
      fs::rename(file.parent_path(), file.parent_path().string() + ".old");
      break;
    case 4:
      fs::permissions(file, fs::perms::owner_read);
      break;
    default:
      write_file(dir.path() / "new.h", "int n;\n");
      fs::rename(dir.path() / "new.h", file);
    }
    EXPECT_FALSE(proven.hold(set));
    EXPECT_FALSE(proven.hold(set)) << "and the next";
    EXPECT_TRUE(proven.hold(beside)) << "a set the change does not concern";
  }
  std::cout << "stamp sets: " << watched << " of " << trials << " watched at the change\n";
  EXPECT_GT(watched, 0) << "no trial reached a set's watch";
  EXPECT_LT(watched, trials) << "no trial was still proven by stat";
}

// Each change to what resolving the stamped paths looks up, made after the set is watched: the
// next proof fails, however deep the header, through the symlink or not.
TEST(ProvenStamps, EveryChangeToAWatchedSetFailsItsNextProof) {
  using Change = std::function<void(const Tree&)>;
  const std::vector<std::pair<std::string, Change>> changes = {
      {"a header rewritten, same size",
       [](const Tree& t) { write_file(t.header(11, 24), "int w24;\n"); }},
      {"a header rewritten through its real path",
       [](const Tree& t) { write_file(t.root / "real/d0/h0.h", "int w0;\n"); }},
      {"a header removed", [](const Tree& t) { fs::remove(t.header(5, 5)); }},
      {"a shadowing header created",
       [](const Tree& t) { write_file(t.root / "first/h1.h", "int s;\n"); }},
      {"the symlink pointed elsewhere",
       [](const Tree& t) {
         fs::copy(t.root / "real", t.root / "copy", fs::copy_options::recursive);
         write_file(t.root / "copy/d1/h1.h", "int other;\n");
         fs::remove(t.root / "link");
         fs::create_directory_symlink(t.root / "copy", t.root / "link");
       }},
      {"a folder renamed away",
       [](const Tree& t) { fs::rename(t.root / "real/d7", t.root / "real/d7.old"); }},
      {"a header's mode changed",
       [](const Tree& t) { fs::permissions(t.header(2, 3), fs::perms::owner_read); }},
  };
  for (const auto& [what, change] : changes) {
    SCOPED_TRACE(what);
    test::TempDir dir;
    const Tree tree(dir.path());
    const std::string stamps = tree.stamps();
    ProvenStamps proven(detail::probe_filesystem, 1);
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(proven.hold(stamps));
    ASSERT_EQ(proven.stat_checks(), 2u) << "watched";
    change(tree);
    EXPECT_FALSE(proven.hold(stamps));
    EXPECT_FALSE(proven.hold(stamps)) << "and the next";
  }
}

// A directory watched for what its entries' inodes do (their attributes, content, opens) makes
// the kernel walk every cached entry of it, absent names included, when the watch is added: 35 ms
// for a busy /tmp, in each process. Every folder on the stamped paths, from /, is watched for its
// names only; the headers themselves for their content and attributes.
TEST_F(ProvenStampsTest, NoFolderIsWatchedForWhatItsEntriesDo) {
  ProvenStamps proven(detail::probe_filesystem, 1);
  ASSERT_TRUE(proven.hold(stamps));
  ASSERT_TRUE(proven.hold(stamps));
  ASSERT_EQ(proven.stat_checks(), 2u) << "watched";
  std::vector<fs::path> folders;
  for (fs::path at = dir.path(); at != at.parent_path(); at = at.parent_path())
    folders.push_back(at);
  folders.emplace_back("/");
  for (const auto& item : fs::recursive_directory_iterator(dir.path()))
    if (item.is_directory() && !item.is_symlink())
      folders.push_back(item.path());
  const auto watches = test::inotify_watches();
  constexpr std::uint32_t k_on_entries =
      IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_OPEN;
  int watched = 0;
  for (const fs::path& folder : folders) {
    struct stat st {};
    ASSERT_EQ(::stat(folder.c_str(), &st), 0) << folder;
    const auto kernel_dev = (static_cast<unsigned long>(major(st.st_dev)) << 20) | minor(st.st_dev);
    const auto it = watches.find({kernel_dev, st.st_ino});
    if (it == watches.end())
      continue;
    ++watched;
    EXPECT_EQ(it->second & k_on_entries, 0u) << folder << " mask " << std::hex << it->second;
  }
  // /, the folders down to the tree, its link's target and the 12 header folders, and "first".
  EXPECT_GE(watched, 15) << "the folders on the stamped paths are watched";
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(proven.hold(stamps));
  EXPECT_EQ(proven.stat_checks(), 2u) << "and proven by their watches";
}

// A header behind a folder that may not be searched is unreachable, not absent: no event would
// tell when the folder is opened (folders are watched for their names only), so its set is never
// watched. Each proof stats, and the proof after the folder is opened fails. Run as uid 65534 when
// root (who may search any folder).
TEST(ProvenStamps, AHeaderBehindAFolderThatMayNotBeSearchedIsStatedAtEveryProof) {
  test::TempDir dir;
  write_file(dir.path() / "shut/h.h", "int s;\n");
  write_file(dir.path() / "open/h.h", "int o;\n");
  const fs::path shut = dir.path() / "shut";
  const bool root = ::geteuid() == 0;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  if (root) {
    ASSERT_EQ(::chown(shut.c_str(), 65534, 65534), 0);
  }
  ASSERT_EQ(::chmod(shut.c_str(), 0600), 0);
  test::ChildProcess child([&] {
    if (root && (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
                 ::setresuid(65534, 65534, 65534) != 0))
      return 10;
    const std::string stamps =
        detail::encode_stamps({detail::stamp_of((shut / "h.h").string()),
                               detail::stamp_of((dir.path() / "open/h.h").string())});
    ProvenStamps proven(detail::probe_filesystem, 0);
    for (int i = 0; i < 3; ++i)
      if (!proven.hold(stamps))
        return 11;
    if (proven.stat_checks() != 3)
      return 12;
    if (::chmod(shut.c_str(), 0700) != 0)
      return 13;
    return proven.hold(stamps) ? 14 : 0;
  });
  EXPECT_EQ(child.wait(), 0) << "10: could not become uid 65534; 11: a proof failed; 12: the set "
                                "was watched; 13: chmod failed; 14: the opened folder was missed";
}

// On a network filesystem another machine's writes raise no event here: every proof stats.
TEST_F(ProvenStampsTest, WhereFilesCannotBeWatchedEveryProofStats) {
  ProvenStamps proven(pretend_nfs, 1);
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(proven.hold(stamps)) << i;
  EXPECT_EQ(proven.stat_checks(), 5u);
  write_file(tree.header(0, 0), "int x0;\n");
  EXPECT_FALSE(proven.hold(stamps));
}

// Past its bound the remembered sets are forgotten: proven by stat again, never wrongly.
TEST_F(ProvenStampsTest, ForgottenSetsAreProvenAgainByStat) {
  ProvenStamps proven(detail::probe_filesystem, 1);
  ASSERT_TRUE(proven.hold(stamps));
  ASSERT_TRUE(proven.hold(stamps));
  const std::string one = detail::encode_stamps({detail::stamp_of(tree.header(0, 0).string())});
  for (int i = 0; i < 1100; ++i) // more sets than it keeps: each its own (a missing file)
    proven.hold(detail::encode_stamps(
        {detail::stamp_of((dir.path() / ("absent" + std::to_string(i))).string())}));
  const std::uint64_t before = proven.stat_checks();
  EXPECT_TRUE(proven.hold(stamps));
  EXPECT_EQ(proven.stat_checks(), before + 1) << "forgotten: stat'ed";
  write_file(tree.header(3, 3), "int y3;\n");
  EXPECT_FALSE(proven.hold(stamps));
}

// 8 threads prove the same set at once, 200 times each, then a header changes: every proof
// before the change holds, every one after it fails; the threads stat it a few times in all.
TEST_F(ProvenStampsTest, ThreadsProvingOneSetAtOnceSeeAChangeMadeBetweenRounds) {
  ProvenStamps proven(detail::probe_filesystem, 1);
  const auto round = [&](bool expected) {
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 200; ++i)
          if (proven.hold(stamps) != expected)
            ++wrong;
      });
    for (std::thread& thread : threads)
      thread.join();
    return wrong.load();
  };
  EXPECT_EQ(round(true), 0);
  EXPECT_LE(proven.stat_checks(), 16u) << "not a stat per proof";
  write_file(tree.header(6, 6), "int z6;\n");
  EXPECT_EQ(round(false), 0);
}

} // namespace
} // namespace jitcache
