// FileWatch resolves each folder of a watch() once for every header in it. On random trees of
// folders, headers, symlinks (absolute, relative, chained, dangling, looping) and absent names,
// reached through ".", ".." and relative paths: any change that makes a watched path stat
// differently is seen, and watching many paths at once sets exactly the watches that watching
// each path alone sets.
#include "core/engine/file_watch.hpp"
#include "core/key/file_stamp.hpp"
#include "tests/support/files.hpp"
#include "tests/support/in_folder.hpp"
#include "tests/support/inotify_instances.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace jitcache {
namespace {

namespace fs = std::filesystem;
using detail::FileWatch;
using Watches = test::InotifyWatches;

// What watching `paths` in one fresh FileWatch sets (nullopt when it declines).
std::optional<Watches> watched(const std::vector<std::string>& paths) {
  std::vector<detail::FileStamp> stamps;
  for (const auto& path : paths)
    stamps.push_back(detail::stamp_of(path));
  const std::set<int> before = test::inotify_fds();
  FileWatch watch;
  if (!watch.watch(detail::encode_stamps(stamps)))
    return std::nullopt;
  return test::inotify_watches(before);
}

// A random tree under `root`: folders up to three deep, headers in them, and symlinks of every
// kind among them. Returns every name made (relative to `root`).
std::vector<std::string> random_tree(const fs::path& root, std::mt19937& rng) {
  std::vector<std::string> folders{""}, names;
  const auto pick = [&](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(rng)];
  };
  const auto under = [](const std::string& folder, const std::string& name) {
    return folder.empty() ? name : folder + "/" + name;
  };
  for (int i = 0; i < 6; ++i) {
    const std::string parent = pick(folders);
    if (std::count(parent.begin(), parent.end(), '/') >= 2)
      continue;
    const std::string folder = under(parent, "d" + std::to_string(i));
    fs::create_directories(root / folder);
    folders.push_back(folder);
    names.push_back(folder);
  }
  for (int i = 0; i < 12; ++i) {
    // Few names, in many folders: a path resolved from the wrong folder finds a header too.
    const std::string file = under(pick(folders), "h" + std::to_string(i % 3) + ".h");
    test::write_file(root / file, "int v" + std::to_string(i) + ";\n");
    if (std::find(names.begin(), names.end(), file) == names.end())
      names.push_back(file);
  }
  for (int i = 0; i < 6; ++i) {
    const std::string link = under(pick(folders), "l" + std::to_string(i));
    std::string target;
    switch (std::uniform_int_distribution<int>(0, 4)(rng)) {
    case 0: // absolute, to anything made so far
      target = (root / pick(names)).string();
      break;
    case 1: // relative, up to the root and down again
      for (long up = std::count(link.begin(), link.end(), '/'); up > 0; --up)
        target += "../";
      target += pick(names);
      break;
    case 2: // dangling
      target = "absent" + std::to_string(i);
      break;
    case 3: // to another link (a chain, or a loop)
      target = (root / under(pick(folders), "l" + std::to_string((i + 1) % 6))).string();
      break;
    default: // through "." and "..", back to the link's own folder (the root's: ".")
      target = link.find('/') == std::string::npos
                   ? "./."
                   : "./../" + fs::path(link).parent_path().filename().string() + "/.";
      break;
    }
    std::error_code ec;
    fs::create_symlink(target, root / link, ec);
    if (!ec)
      names.push_back(link);
  }
  return names;
}

// A path into the tree: a name made, or a header looked for under one (present or absent),
// directly or through "." and "..".
std::string random_path(const std::vector<std::string>& names, std::mt19937& rng) {
  const auto& name = names[std::uniform_int_distribution<std::size_t>(0, names.size() - 1)(rng)];
  const std::string header = "h" + std::to_string(rng() % 3) + ".h";
  switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
  case 0:
  case 1:
    return name + "/" + header;
  case 2:
    return name + "/./" + header;
  case 3:
    return name + "/../" + header;
  case 4:
    return name + "/..";
  default:
    return name;
  }
}

// `count` random paths into the tree at `root`: every third relative to it (the current folder
// while a trial runs), the others absolute.
std::vector<std::string> random_paths(const fs::path& root, const std::vector<std::string>& names,
                                      int count, std::mt19937& rng) {
  std::vector<std::string> paths;
  for (int i = 0; i < count; ++i) {
    const std::string path = random_path(names, rng);
    paths.push_back(i % 3 == 0 ? path : (root / path).string());
  }
  return paths;
}

TEST(FileWatch, WatchingManyPathsAtOnceSetsWhatWatchingEachAloneSets) {
  std::mt19937 rng(20261128);
  int compared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    test::TempDir dir;
    const auto names = random_tree(dir.path(), rng);
    const test::InFolder in_tree(dir.path());
    const auto paths = random_paths(dir.path(), names, 16, rng);
    const auto together = watched(paths);
    std::optional<Watches> alone = Watches{};
    for (const auto& path : paths) {
      const auto one = watched({path});
      if (!one) {
        alone.reset();
        break;
      }
      for (const auto& [inode, mask] : *one)
        (*alone)[inode] |= mask;
    }
    ASSERT_EQ(together.has_value(), alone.has_value()) << "both watch, or both decline";
    if (!together)
      continue;
    ++compared;
    EXPECT_EQ(*together, *alone);
  }
  EXPECT_GT(compared, 30) << "most trials watch every path (loops and deep chains decline)";
}

// One random change on the way to a watched path: at one of its prefixes, a header created
// where none is, or the entry there removed, rewritten, renamed away or, for a symlink, pointed
// elsewhere. The prefix is resolved as the kernel resolves the path (symlinks, ".."), and nothing
// is changed unless the folder it resolves to is inside `root`: a test that runs as root must
// not reach out of its tree.
void change_something(const fs::path& root, const std::vector<std::string>& paths,
                      const std::vector<std::string>& names, std::mt19937& rng) {
  const auto pick = [&](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(rng)];
  };
  const fs::path path = (root / pick(paths)).lexically_relative(root); // relative ones too
  fs::path written = root;
  const auto parts = std::distance(path.begin(), path.end());
  const auto cut = rng() % 2 ? parts : std::uniform_int_distribution<long>(1, parts)(rng);
  for (auto it = path.begin(); std::distance(path.begin(), it) < cut; ++it)
    written /= *it;
  const std::string name = written.filename().string();
  std::error_code ec;
  const fs::path folder = fs::canonical(written.parent_path(), ec);
  const fs::path inside = fs::canonical(root, ec);
  if (ec || name.empty() || name == "." || name == ".." ||
      (folder != inside && folder.string().rfind(inside.string() + "/", 0) != 0))
    return;
  const fs::path at = folder / name; // the entry itself, its folder resolved
  if (!fs::exists(fs::symlink_status(at, ec))) {
    std::ofstream(at) << "int made;\n";
    return;
  }
  switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
  case 0:
    fs::remove_all(at, ec); // a symlink is removed, not followed
    break;
  case 1:
    if (fs::is_regular_file(fs::symlink_status(at, ec)))
      std::ofstream(at) << "int w" << rng() % 10 << ";\n";
    break;
  case 2:
    fs::rename(at, folder / (name + ".moved"), ec);
    break;
  default:
    if (fs::is_symlink(at, ec)) {
      fs::remove(at, ec);
      fs::create_symlink(root / pick(names), at, ec);
    }
    break;
  }
}

TEST(FileWatch, AChangeThatMakesAWatchedPathStatDifferentlyIsSeen) {
  std::mt19937 rng(28112026);
  int seen = 0;
  for (int trial = 0; trial < 300; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    test::TempDir dir;
    const auto names = random_tree(dir.path(), rng);
    const test::InFolder in_tree(dir.path());
    const auto paths = random_paths(dir.path(), names, 12, rng);
    std::vector<detail::FileStamp> before;
    for (const auto& path : paths)
      before.push_back(detail::stamp_of(path));
    FileWatch watch;
    const auto ticket = watch.watch(detail::encode_stamps(before));
    bool changed = false;
    if (ticket) {
      change_something(dir.path(), paths, names, rng);
      for (const auto& stamp : before)
        changed = changed || !(detail::stamp_of(stamp.path) == stamp);
      if (changed) {
        ++seen;
        std::string listed;
        for (const auto& stamp : before)
          listed += " " + stamp.path;
        EXPECT_FALSE(watch.unchanged_since(*ticket)) << "paths:" << listed;
      }
    }
  }
  EXPECT_GT(seen, 80) << "most trials change a watched path";
}

// The stamps of `count` headers made in `folder`.
std::string headers_in(const fs::path& folder, int count) {
  std::vector<detail::FileStamp> stamps;
  for (int h = 0; h < count; ++h) {
    const fs::path header = folder / ("h" + std::to_string(h) + ".h");
    test::write_file(header, "int v;\n");
    stamps.push_back(detail::stamp_of(header.string()));
  }
  return detail::encode_stamps(stamps);
}

// Each process watching as much as it likes would leave the user's other programs (an editor, a
// file synchroniser, the next process) without a watch: an instance keeps to its budget, and a
// set that would take it past declines (and is proven by stat) holding no watch.
TEST(FileWatch, AnInstanceKeepsToItsBudgetAndASetThatWouldPassItHoldsNoWatch) {
  test::TempDir dir;
  const std::string many = headers_in(dir.path() / "many", 60);
  const std::string first = headers_in(dir.path() / "first", 20);
  const std::string second = headers_in(dir.path() / "second", 20);
  const std::set<int> before = test::inotify_fds();
  FileWatch watch(detail::probe_filesystem, 40);

  EXPECT_FALSE(watch.watch(many)) << "60 headers need more than 40 watches";
  EXPECT_TRUE(test::inotify_watches(before).empty()) << "the declined set left no watch behind";

  const auto ticket = watch.watch(first);
  ASSERT_TRUE(ticket) << "20 headers and the folders above them fit";
  const auto held = test::inotify_watches(before);
  EXPECT_GT(held.size(), 20u);
  EXPECT_LE(held.size(), 40u);

  EXPECT_FALSE(watch.watch(second)) << "20 more would pass the budget";
  EXPECT_EQ(test::inotify_watches(before), held) << "only the declined set's watches were removed";
  EXPECT_TRUE(watch.unchanged_since(*ticket)) << "removing them is no change to the first set";

  test::write_file(dir.path() / "first" / "h7.h", "int w;\n");
  EXPECT_FALSE(watch.unchanged_since(*ticket)) << "the first set is still watched";
}

TEST(FileWatch, ByDefaultAnInstanceTakesItsShareOfTheUsersWatches) {
  std::ifstream watches("/proc/sys/fs/inotify/max_user_watches"),
      instances("/proc/sys/fs/inotify/max_user_instances");
  std::size_t max_watches = 0, max_instances = 0;
  if (!(watches >> max_watches) || !(instances >> max_instances))
    GTEST_SKIP() << "the kernel's inotify limits cannot be read";
  const std::size_t share = max_watches / max_instances;
  if (share > 2000)
    GTEST_SKIP() << "a share of " << share << " watches: too many headers to make here";
  test::TempDir dir;
  const std::set<int> before = test::inotify_fds();
  FileWatch watch;
  EXPECT_TRUE(watch.watch(headers_in(dir.path() / "fits", static_cast<int>(share / 2))));
  EXPECT_FALSE(watch.watch(headers_in(dir.path() / "past", static_cast<int>(share))));
  EXPECT_LE(test::inotify_watches(before).size(), share);
}

} // namespace
} // namespace jitcache
