// The cache directory as a hostile or unlucky place, through the real CLI and PoCL: symlinks
// planted in it, a small tmpfs that fills up, a cache that belongs to another user. Nothing
// outside the cache changes, nothing is created where it must not be, no command dies of a
// signal, and every build returns its kernel.
#include "tests/support/child_process.hpp"
#include "tests/support/files.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sample_kernels.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>

namespace jitcache {
namespace {
using test::k_kernels;
using test::read_file;

namespace fs = std::filesystem;
using test::json_lines;
using test::ProcessResult;

// Two of the sample kernels: every test builds them many times.
const std::vector<std::string> k_safety_sources = {"matmul.cl", "reduce.cl"};
constexpr int k_skip = 77; // a child's exit status meaning "not permitted here"

std::vector<std::string> build_args(const std::string& options = {}) {
  std::vector<std::string> args{
      "build", "--backend", "opencl", "--options", "-I " + k_kernels + options, "--json"};
  for (const auto& source : k_safety_sources)
    args.push_back(k_kernels + "/" + source);
  return args;
}

// Every path under `root` with its type, owner, group and mode; and, with `bytes`, the content
// of its regular files.
std::map<std::string, std::string> snapshot(const fs::path& root, bool bytes) {
  std::map<std::string, std::string> result;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    ::lstat(it->path().c_str(), &st);
    std::string what = std::to_string(st.st_mode) + " " + std::to_string(st.st_uid) + ":" +
                       std::to_string(st.st_gid);
    if (bytes && S_ISREG(st.st_mode))
      what += " " + read_file(it->path());
    result[fs::relative(it->path(), root).string()] = what;
  }
  return result;
}

// What is wrong with a command's run: killed by a signal, an exit status other than 0 or 1, or
// a failure without a message. Empty when nothing is.
std::string command_problem(const std::string& what, const ProcessResult& r) {
  if (r.exit_code > 1)
    return what + ": exit status " + std::to_string(r.exit_code) + "\n" + r.err;
  if (r.exit_code == 1 && r.err.empty())
    return what + ": failed without saying why";
  return {};
}

// The same, for a build, which must also have returned every kernel (of a known size, unless
// `read_only`: a read-only build does not keep what it compiles); `outcome`, when given, is what
// each must have been ("hit": from the user tier).
std::string build_problem(const std::string& what, const ProcessResult& r,
                          const std::string& outcome = {}, bool read_only = false) {
  if (r.exit_code != 0)
    return what + ": exit status " + std::to_string(r.exit_code) + "\n" + r.err;
  const auto lines = json_lines(r.out);
  if (lines.size() != k_safety_sources.size())
    return what + ": " + std::to_string(lines.size()) + " kernels returned\n" + r.out;
  for (const auto& line : lines) {
    if (line["key"].get<std::string>().size() != 64 ||
        (!read_only && line["bytes"].get<std::uint64_t>() == 0))
      return what + ": no kernel\n" + r.out;
    if (!outcome.empty() && (line["outcome"] != outcome || line["tier"] != "user"))
      return what + ": " + line["file"].get<std::string>() + " was a " +
             line["outcome"].get<std::string>() + " from tier " + line["tier"].get<std::string>() +
             ", not a " + outcome + " from the user tier\n" + r.err;
  }
  return {};
}

// Runs every command of the CLI against the cache in `env` (two builds, prune, verify, stats,
// list, a read-only build, clear, a build) and returns what went wrong, one problem a line.
template <typename Run> std::string every_command(const Run& run, const std::string& label) {
  std::string problems;
  const auto note = [&](const std::string& problem) {
    if (!problem.empty())
      problems += label + ", " + problem + "\n";
  };
  note(build_problem("build", run(build_args(), std::map<std::string, std::string>{})));
  note(build_problem("build again", run(build_args(), std::map<std::string, std::string>{})));
  note(command_problem("prune", run({"prune", "--max-size", "1K", "--json"}, {})));
  for (const char* command : {"verify", "stats", "list", "info"})
    note(command_problem(command, run({command, "--json"}, {})));
  note(build_problem("read-only build", run(build_args(), {{"JITCACHE_READONLY", "1"}}), {}, true));
  note(command_problem("clear", run({"clear", "--json"}, {})));
  note(build_problem("build after clear", run(build_args(), {})));
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Symlinks planted in the cache directory, pointing outside it.

struct Plant {
  std::string name;
  std::string at;     ///< path inside the cache's v1/ that becomes a link
  std::string target; ///< inside the victim directory
  bool after_build;   ///< planted once a build has made the cache (else into an empty v1/)
};

void PrintTo(const Plant& plant, std::ostream* os) {
  *os << plant.name;
}

class PlantedLinks : public ::testing::TestWithParam<Plant> {
protected:
  std::map<std::string, std::string> env(std::map<std::string, std::string> extra = {}) {
    extra.emplace("JITCACHE_DIR", (dir.path() / "cache").string());
    return extra;
  }
  fs::path v1() const { return dir.path() / "cache" / "v1"; }
  test::TempDir dir;
  test::TempDir outside;
};

TEST_P(PlantedLinks, NothingOutsideTheCacheChangesAndBuildsReturnTheirKernel) {
  const Plant& plant = GetParam();
  std::ofstream(outside.path() / "victim") << "precious bytes\n";
  fs::create_directory(outside.path() / "victim_dir");
  std::ofstream(outside.path() / "victim_dir" / "keep") << "kept\n";
  const auto before = snapshot(outside.path(), true);

  std::string at = plant.at;
  if (plant.after_build) {
    auto first = test::run_cli(build_args(), env());
    ASSERT_EQ(build_problem("first build", first), "");
    if (at == "leases/KEY") { // the lease a miss of matmul.cl takes
      at = "leases/" + json_lines(first.out)[0]["key"].get<std::string>();
      ASSERT_EQ(test::run_cli({"clear"}, env()).exit_code, 0);
    }
  } else {
    fs::create_directories(v1());
    fs::permissions(v1(), fs::perms::owner_all);
  }
  fs::remove(v1() / at);
  fs::create_symlink(outside.path() / plant.target, v1() / at);

  const std::string link = (v1() / at).string();
  std::size_t warnings = 0;
  const auto run = [&](const std::vector<std::string>& args,
                       const std::map<std::string, std::string>& extra) {
    auto r = test::run_cli(args, env(extra));
    if (args[0] == "build") {
      std::size_t here = 0;
      for (auto at = r.err.find(link); at != std::string::npos; at = r.err.find(link, at + 1))
        ++here;
      EXPECT_LE(here, 1u) << "one warning a process\n" << r.err;
      warnings += here;
    }
    return r;
  };
  EXPECT_EQ(every_command(run, plant.name), "");
  EXPECT_GE(warnings, 1u) << "a warning names the link";
  EXPECT_EQ(snapshot(outside.path(), true), before);
  EXPECT_TRUE(fs::is_symlink(link)) << "the link itself is left alone";
}

INSTANTIATE_TEST_SUITE_P(
    , PlantedLinks,
    ::testing::Values(Plant{"lease_file", "leases/KEY", "victim", true},
                      Plant{"lease_directory", "leases", "victim_dir", false},
                      Plant{"lock_file", "lock.mdb", "victim", true},
                      Plant{"data_file", "data.mdb", "victim", true},
                      Plant{"dangling_data_file", "data.mdb", "victim_dir/new", false},
                      Plant{"gate", "gate", "victim", true}),
    [](const ::testing::TestParamInfo<Plant>& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------------
// Read-only commands and JITCACHE_READONLY=1 create nothing.

TEST(ReadOnlyCommands, CreateNothingNotEvenALockFileOrTheDirectory) {
  test::TempDir dir;
  const std::map<std::string, std::string> env{{"JITCACHE_DIR", dir.path().string()}};
  auto readonly = env;
  readonly.emplace("JITCACHE_READONLY", "1");
  ASSERT_EQ(build_problem("build", test::run_cli(build_args(), env)), "");
  for (const char* name : {"lock.mdb", "gate", "leases"}) // leases: the compile slots' file
    fs::remove_all(dir.path() / "v1" / name);
  const auto before = snapshot(dir.path(), true);
  for (const char* command : {"verify", "stats", "list", "info"})
    EXPECT_EQ(test::run_cli({command, "--json"}, env).exit_code, 0) << command;
  EXPECT_EQ(build_problem("read-only build", test::run_cli(build_args(), readonly), "hit", true),
            "");
  EXPECT_EQ(
      build_problem("read-only miss", test::run_cli(build_args(" -D NEW"), readonly), {}, true),
      "");
  EXPECT_EQ(snapshot(dir.path(), true), before);

  const std::map<std::string, std::string> absent{
      {"JITCACHE_DIR", (dir.path() / "absent").string()}, {"JITCACHE_READONLY", "1"}};
  for (const char* command : {"verify", "stats", "list", "info"})
    EXPECT_EQ(test::run_cli({command, "--json"}, absent).exit_code, 0) << command;
  EXPECT_EQ(build_problem("read-only build", test::run_cli(build_args(), absent), {}, true), "");
  EXPECT_FALSE(fs::exists(dir.path() / "absent"));
}

// ---------------------------------------------------------------------------------------------
// A small tmpfs as the cache directory, filled up by the cache and by a big file.

// Writes `file` until the filesystem holding it has at most `spare` bytes left (0: until a
// write fails).
void fill(const fs::path& file, std::uint64_t spare) {
  struct statvfs st {};
  ::statvfs(file.parent_path().c_str(), &st);
  const std::uint64_t room = std::uint64_t(st.f_bavail) * st.f_frsize;
  std::uint64_t left = spare == 0 ? UINT64_MAX : (room > spare ? room - spare : 0);
  std::ofstream out(file, std::ios::binary | std::ios::app);
  const std::string chunk(4096, 'x');
  for (; left >= chunk.size() && out.write(chunk.data(), chunk.size()); left -= chunk.size())
    out.flush();
}

class SmallTmpfs : public ::testing::TestWithParam<std::string> {
protected:
  test::TempDir dir;
};

TEST_P(SmallTmpfs, FilledUpEveryCommandExitsCleanlyAndBuildsReturnTheirKernel) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "mounting a tmpfs needs root";
  test::ChildProcess child([&] {
    const fs::path where = dir.path() / "small";
    fs::create_directory(where);
    const std::string options = "size=" + GetParam() + ",mode=0700";
    if (!test::private_mounts() ||
        ::mount("tmpfs", where.c_str(), "tmpfs", 0, options.c_str()) != 0)
      return k_skip;
    const auto run = [&](const std::vector<std::string>& args,
                         std::map<std::string, std::string> extra) {
      extra.emplace("JITCACHE_DIR", where.string());
      return test::run_cli(args, extra);
    };
    // The cache itself fills the disk: new keys until nothing more fits.
    std::string problems;
    fill(where / "filler", 256 << 10);
    for (int i = 0; i < 3; ++i)
      problems += build_problem("variant " + std::to_string(i),
                                run(build_args(" -D VARIANT=" + std::to_string(i)), {}));
    problems += every_command(run, "filled by the cache");
    fill(where / "filler", 0);
    problems += every_command(run, "full");
    // What `prune` used to leave: no lock file, on a full disk (the room it took filled too).
    // Readers first: they must not make one (LMDB would fault on its unbacked pages).
    fs::remove(where / "v1" / "lock.mdb");
    fill(where / "filler", 0);
    for (const char* command : {"verify", "stats", "list"})
      problems +=
          command_problem(std::string("no lock file, ") + command, run({command, "--json"}, {}));
    problems += build_problem("no lock file, read-only build",
                              run(build_args(), {{"JITCACHE_READONLY", "1"}}), {}, true);
    problems += every_command(run, "full, lock file removed");
    fs::remove(where / "filler");
    problems += command_problem("prune with room", run({"prune", "--json"}, {}));
    fill(where / "big", 0);
    problems += every_command(run, "full of one big file after prune");
    std::fputs(problems.c_str(), stderr);
    return problems.empty() ? 0 : 1;
  });
  const int status = child.wait();
  if (status == k_skip)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN)";
  EXPECT_EQ(status, 0) << child.err();
}

INSTANTIATE_TEST_SUITE_P(, SmallTmpfs, ::testing::Values("2m", "64k"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return "size_" + info.param;
                         });

// ---------------------------------------------------------------------------------------------
// A cache that belongs to another user, read by root and by a third user.

class ForeignCache : public ::testing::TestWithParam<std::string> {
protected:
  // The environment of `who`: the cache, and a HOME of its own (PoCL keeps its cache there).
  std::map<std::string, std::string> env_of(const test::Identity& who,
                                            std::map<std::string, std::string> extra = {}) {
    const fs::path home = dir.path() / ("home-" + std::to_string(who.uid));
    if (fs::create_directory(home)) {
      EXPECT_EQ(::chown(home.c_str(), who.uid, who.gid), 0);
    }
    extra.emplace("JITCACHE_DIR", cache().string());
    extra.emplace("HOME", home.string());
    extra.emplace("XDG_CACHE_HOME", (home / ".cache").string());
    extra.emplace("POCL_CACHE_DIR", (home / "pocl").string());
    return extra;
  }
  fs::path cache() const { return dir.path() / "cache"; }
  test::TempDir dir;
};

TEST_P(ForeignCache, RootAndAThirdUserCreateNothingAndTheOwnerStillHits) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "only root can act as other users";
  const test::Identity owner{65534, 65534}, third{65533, 65533}, root{0, 0};
  fs::permissions(dir.path(), fs::perms(0755));
  fs::create_directory(cache());
  ASSERT_EQ(::chown(cache().c_str(), owner.uid, owner.gid), 0);
  ASSERT_EQ(build_problem("owner's build", test::run_cli_as(owner, build_args(), env_of(owner))),
            "");
  // Readable by everyone, as its owner may make it; writable by its owner only.
  fs::permissions(cache(), fs::perms(0755));
  for (const auto& item : fs::recursive_directory_iterator(cache()))
    fs::permissions(item.path(), fs::perms(item.is_directory() ? 0755 : 0644));
  if (GetParam() != "lock_file")
    fs::remove(cache() / "v1" / "lock.mdb");
  if (GetParam() == "no_lock_file_nor_gate")
    fs::remove(cache() / "v1" / "gate");
  const auto before = snapshot(cache(), false);

  for (const test::Identity& who : {root, third}) {
    const std::string label = "uid " + std::to_string(who.uid);
    const auto run = [&](const std::vector<std::string>& args,
                         std::map<std::string, std::string> extra) {
      return test::run_cli_as(who, args, env_of(who, std::move(extra)));
    };
    EXPECT_EQ(build_problem(label + " build", run(build_args(), {}), "hit"), "");
    EXPECT_EQ(every_command(run, label), "");
    // Nor a cache directory of its own inside the owner's.
    EXPECT_EQ(build_problem(label + " elsewhere",
                            run(build_args(), {{"JITCACHE_DIR", (cache() / "sub").string()}})),
              "");
    EXPECT_EQ(snapshot(cache(), false), before) << label << " created or changed nothing";
  }
  EXPECT_EQ(build_problem("owner's next build",
                          test::run_cli_as(owner, build_args(), env_of(owner)), "hit"),
            "");
  // What an older jitcache run by root left: its own lock file. The owner replaces it.
  const fs::path lock = cache() / "v1" / "lock.mdb";
  fs::remove(lock);
  std::ofstream(lock).close();
  fs::permissions(lock, fs::perms(0600));
  auto replaced = test::run_cli_as(owner, build_args(), env_of(owner));
  EXPECT_EQ(build_problem("owner's build over root's lock file", replaced, "hit"), "");
  EXPECT_EQ(replaced.err, "");
  struct stat st {};
  ASSERT_EQ(::stat(lock.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, owner.uid);
  EXPECT_EQ(st.st_size, 65536);
}

INSTANTIATE_TEST_SUITE_P(, ForeignCache,
                         ::testing::Values("lock_file", "no_lock_file", "no_lock_file_nor_gate"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

} // namespace
} // namespace jitcache
