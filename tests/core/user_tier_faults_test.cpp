// The user tier under faults: a small or foreign-grown map, fork, damaged and truncated files,
// stale readers, foreign and network directories, compaction, freed pages, and - in a private
// mount namespace, where permitted - a read-only filesystem and a full disk.
#include "core/support/fs_check.hpp"
#include "core/support/log.hpp"
#include "core/tiers/user/lmdb_store.hpp"
#include "core/tiers/user/user_store.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/lock_holder.hpp"
#include "tests/support/pretend_nfs.hpp"
#include "tests/support/samples.hpp"
#include "tests/support/temp_dir.hpp"

#include <jitcache/cache.hpp>

#include <gtest/gtest.h>
#include <lmdb.h>

#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <set>

namespace jitcache {

using detail::Filesystem;
using detail::LmdbStore;
using detail::network_filesystem_name;
using detail::open_user_store;
using detail::probe_filesystem;
namespace {
using test::has_aside_file;
using test::lock_holder;
using test::numbered_entry;
using test::numbered_key;
using test::pretend_nfs;

namespace fs = std::filesystem;
using test::ChildProcess;
using test::private_mounts;

constexpr int k_skip = 77; // a child's exit status meaning "not permitted here"

std::size_t count_lines(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

class UserTierFaults : public ::testing::Test {
protected:
  std::shared_ptr<LmdbStore> open(std::size_t map_size = std::size_t(1) << 30) {
    LmdbStore::Options options;
    options.map_size = map_size;
    return LmdbStore::open(dir.path(), false, options).value();
  }
  void fill(int from, int to, std::size_t bytes) {
    auto store = open();
    for (int i = from; i < to; ++i)
      ASSERT_TRUE(store->put(numbered_key(i), numbered_entry(i, bytes)));
  }
  test::TempDir dir;
};

TEST_F(UserTierFaults, TheMapGrowsFromASmallInitialSize) {
  auto store = open(256 << 10);
  for (int i = 0; i < 40; ++i)
    ASSERT_TRUE(store->put(numbered_key(i), numbered_entry(i, 100 << 10))) << i;
  for (int i = 0; i < 40; ++i)
    EXPECT_EQ(store->get(numbered_key(i)).value()->payload.size(), 100u << 10);
}

TEST_F(UserTierFaults, AMapGrownByAnotherProcessIsAdopted) {
  auto store = open(512 << 10);
  ASSERT_TRUE(store->put(numbered_key(0), numbered_entry(0, 1000)));
  // The child reopens (fork) with the same small map and grows it well past ours.
  ChildProcess child([&] {
    for (int i = 1; i < 30; ++i)
      if (!store->put(numbered_key(i), numbered_entry(i, 100 << 10)))
        return 1;
    return 0;
  });
  ASSERT_EQ(child.wait(), 0) << child.err();
  for (int i = 0; i < 30; ++i)
    ASSERT_TRUE(store->get(numbered_key(i)).value()) << i;
  ASSERT_TRUE(store->put(numbered_key(30), numbered_entry(30, 100 << 10)));
}

TEST_F(UserTierFaults, AChildAfterForkUsesItsOwnEnvironment) {
  auto store = open();
  ASSERT_TRUE(store->put(numbered_key(0), numbered_entry(0, 5000)));
  ChildProcess child([&] {
    // Both a read and a write through the parent's store object, then the child's copies are
    // destroyed: none of it may touch the parent's environment.
    auto got = store->get(numbered_key(0));
    if (!got || !*got)
      return 1;
    if (!store->put(numbered_key(1), numbered_entry(1, 5000)))
      return 2;
    store.reset();
    return 0;
  });
  ASSERT_EQ(child.wait(), 0) << child.err();
  EXPECT_TRUE(store->get(numbered_key(1)).value());
  ASSERT_TRUE(store->put(numbered_key(2), numbered_entry(2, 5000)));
  std::uint64_t valid = 0;
  ASSERT_TRUE(store->for_each([&](const Store::Item& item) { valid += item.valid; }));
  EXPECT_EQ(valid, 3u);
}

// A child that drops its copy of its parent's environment (replaced by its own at its first use)
// keeps the locks its own environment holds on lock.mdb: closing any descriptor of a file drops
// every POSIX lock the process holds on it, so the copy's descriptor is left open.
TEST_F(UserTierFaults, AChildDroppingItsParentsEnvironmentKeepsItsOwnLocks) {
  auto store = open();
  ASSERT_TRUE(store->put(numbered_key(0), numbered_entry(0, 5000)));
  const fs::path go = dir.path() / "go";
  ChildProcess child([&] {
    ::alarm(60);
    auto got = store->get(numbered_key(0)); // opens the child's own; the parent's copy is dropped
    if (!got || !*got)
      return 1;
    ChildProcess::tell_parent("open");
    while (!fs::exists(go))
      ::usleep(1000);
    auto again = store->get(numbered_key(0));
    return again && *again ? 0 : 2;
  });
  ASSERT_EQ(child.next_message(), std::optional<std::string>("open")) << child.err();
  using Held = std::pair<int, pid_t>;
  const fs::path lock = dir.path() / "lock.mdb";
  ChildProcess observer([&] { // this process holds locks there, which would hide the child's
    return lock_holder(lock, F_RDLCK, child.pid()) == Held(F_WRLCK, child.pid()) ? 0 : 1;
  });
  EXPECT_EQ(observer.wait(), 0) << "the child's reader slots are not marked live";
  std::ofstream(go).put('\n');
  EXPECT_EQ(child.wait(), 0) << child.err();
}

TEST_F(UserTierFaults, StaleReaderSlotsOfKilledProcessesAreCleared) {
  fill(0, 1, 100);
  // Kept open here: otherwise the next process to open is LMDB's first and resets every slot.
  auto keep = open();
  ChildProcess reader([&] {
    MDB_env* env = nullptr;
    MDB_txn* txn = nullptr;
    mdb_env_create(&env);
    mdb_env_set_maxdbs(env, 8);
    if (mdb_env_open(env, dir.path().c_str(), MDB_RDONLY, 0600) != MDB_SUCCESS ||
        mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) != MDB_SUCCESS)
      return 1;
    ChildProcess::tell_parent("reading");
    ::pause(); // killed with its read transaction open
    return 0;
  });
  ASSERT_EQ(reader.next_message(), "reading");
  reader.kill(SIGKILL);
  reader.wait();
  ChildProcess opener([&] {
    log::set_level(LogLevel::info);
    return LmdbStore::open(dir.path(), false) ? 0 : 1;
  });
  ASSERT_EQ(opener.wait(), 0);
  EXPECT_NE(opener.err().find("cleared 1 reader slot(s) of dead processes"), std::string::npos)
      << opener.err();
}

TEST_F(UserTierFaults, ATruncatedDataFileIsMovedAsideAndAFreshOneUsed) {
  fill(0, 10, 100 << 10);
  fs::resize_file(dir.path() / "data.mdb", 64 << 10);
  testing::internal::CaptureStderr();
  auto store = LmdbStore::open(dir.path(), false);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  EXPECT_EQ(count_lines(err, "\n"), 1u) << err;
  EXPECT_TRUE(has_aside_file(dir.path()));
  EXPECT_EQ((*store)->usage().value().entries, 0u);
  ASSERT_TRUE((*store)->put(numbered_key(0), numbered_entry(0, 1000)));
  EXPECT_TRUE((*store)->get(numbered_key(0)).value());
}

TEST_F(UserTierFaults, AGarbageDataFileIsMovedAsideAndAFreshOneUsed) {
  fill(0, 3, 10000);
  {
    const auto size = fs::file_size(dir.path() / "data.mdb");
    std::mt19937 random(42);
    std::string garbage(size, '\0');
    for (char& c : garbage)
      c = static_cast<char>(random());
    std::ofstream(dir.path() / "data.mdb", std::ios::binary | std::ios::trunc) << garbage;
  }
  testing::internal::CaptureStderr();
  auto store = LmdbStore::open(dir.path(), false);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_NE(err.find("moved it to"), std::string::npos) << err;
  EXPECT_TRUE(has_aside_file(dir.path()));
  EXPECT_EQ(fs::file_size(dir.path() / "lock.mdb"), 65536u) << "kept, and initialised afresh";
  ASSERT_TRUE((*store)->put(numbered_key(0), numbered_entry(0, 1000)));
}

TEST_F(UserTierFaults, ADamagedFileInUseElsewhereIsMovedAsideOnlyOnceItIsFree) {
  fill(0, 2, 1000);
  auto user = test::process_holding_user_tier(dir.path());
  std::ofstream(dir.path() / "damaged").close(); // as a transaction that met MDB_CORRUPTED leaves
  auto refused = LmdbStore::open(dir.path(), false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::corrupt);
  EXPECT_NE(refused.error().message.find("other processes have it open"), std::string::npos);
  EXPECT_FALSE(has_aside_file(dir.path()));
  user.reset();
  auto store = LmdbStore::open(dir.path(), false);
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_TRUE(has_aside_file(dir.path()));
  EXPECT_FALSE(fs::exists(dir.path() / "damaged"));
}

TEST_F(UserTierFaults, ADirectoryWritableByOthersIsOnlyRead) {
  fill(0, 1, 1000);
  fs::permissions(dir.path(), fs::perms::all);
  testing::internal::CaptureStderr();
  auto store = LmdbStore::open(dir.path(), false).value();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(store->writable());
  EXPECT_NE(err.find("writable by group or others (mode 0777); using it read-only"),
            std::string::npos)
      << err;
  EXPECT_TRUE(store->get(numbered_key(0)).value()) << "what is there is still read";
  EXPECT_EQ(store->put(numbered_key(1), numbered_entry(1, 10)).error().code, ErrorCode::read_only);
}

TEST_F(UserTierFaults, ADirectoryOwnedByAnotherUserIsOnlyRead) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "only root can give a directory to another user";
  fill(0, 1, 1000);
  ASSERT_EQ(::chown(dir.path().c_str(), 65534, 65534), 0);
  testing::internal::CaptureStderr();
  auto store = LmdbStore::open(dir.path(), false).value();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(store->writable());
  EXPECT_NE(err.find("owned by uid 65534, not by this user (uid 0)"), std::string::npos) << err;
  ASSERT_EQ(::chown(dir.path().c_str(), 0, 0), 0);
}

TEST_F(UserTierFaults, LmdbIsNeverOpenedOnANetworkFilesystem) {
  LmdbStore::Options options;
  options.probe = &pretend_nfs;
  auto store = LmdbStore::open(dir.path() / "v1", false, options);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::unsupported);
  EXPECT_NE(store.error().message.find("network filesystem (nfs)"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir.path() / "v1")) << "nothing is created there";
}

fs::path g_network_dir;
Filesystem nfs_under_network_dir(const fs::path& p) {
  const bool under = p.string().rfind(g_network_dir.string(), 0) == 0;
  return under ? Filesystem{0x6969, "nfs", true} : Filesystem{0xEF53, "", false};
}

TEST_F(UserTierFaults, ANetworkCacheDirectoryFallsBackToANodeLocalOne) {
  g_network_dir = dir.path() / "home";
  const Config config = Config::from_variables({{"JITCACHE_DIR", g_network_dir.string()}});
  LmdbStore::Options options;
  options.probe = &nfs_under_network_dir;
  testing::internal::CaptureStderr();
  auto store = open_user_store(config, false, options, dir.path() / "tmp");
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(store) << store.error().message;
  const fs::path local = dir.path() / "tmp" / ("jitcache-" + std::to_string(::geteuid())) / "v1";
  EXPECT_EQ((*store)->dir(), local);
  EXPECT_TRUE((*store)->writable());
  EXPECT_NE(err.find("is on a network filesystem (nfs)"), std::string::npos) << err;
  EXPECT_NE(err.find("using the node-local directory " + local.string()), std::string::npos);
  EXPECT_FALSE(fs::exists(g_network_dir));
  EXPECT_EQ(fs::status(local.parent_path()).permissions() & fs::perms::all, fs::perms::owner_all);
}

int g_local_probes = 0;
Filesystem local_counted(const fs::path&) {
  ++g_local_probes;
  return Filesystem{0xEF53, "", false};
}

// The directory's filesystem is probed once on the way to opening it (statfs: a system call that
// a fresh process's first hit makes once, not once per layer).
TEST_F(UserTierFaults, ALocalCacheDirectoryIsProbedOnceOnTheWayToItsOpen) {
  const Config config = Config::from_variables({{"JITCACHE_DIR", (dir.path() / "c").string()}});
  LmdbStore::Options options;
  options.probe = &local_counted;
  g_local_probes = 0;
  auto store = open_user_store(config, false, options);
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_EQ((*store)->dir(), config.cache_dir);
  EXPECT_EQ(g_local_probes, 1);
}

TEST(NetworkFilesystems, KnownTypesAreNamedAndLocalOnesAreNot) {
  EXPECT_EQ(network_filesystem_name(0x6969), "nfs");
  EXPECT_EQ(network_filesystem_name(0x0BD00BD0), "lustre");
  EXPECT_EQ(network_filesystem_name(0x47504653), "gpfs");
  EXPECT_EQ(network_filesystem_name(static_cast<long>(0xFF534D42)), "cifs");
  EXPECT_EQ(network_filesystem_name(static_cast<int>(0xFF534D42)), "cifs") << "sign-extended";
  EXPECT_EQ(network_filesystem_name(0xEF53), std::nullopt);     // ext4
  EXPECT_EQ(network_filesystem_name(0x01021994), std::nullopt); // tmpfs
  EXPECT_EQ(network_filesystem_name(0x58465342), std::nullopt); // xfs
  test::TempDir local;
  EXPECT_FALSE(probe_filesystem(local.path() / "not" / "yet").network);
  EXPECT_NE(probe_filesystem(local.path()).type, 0);
}

TEST(NetworkFilesystems, APathThatDoesNotExistIsOnItsNearestAncestorsFilesystem) {
  test::TempDir local;
  const long here = probe_filesystem(local.path()).type;
  ASSERT_NE(here, 0);
  EXPECT_EQ(probe_filesystem(local.path() / "not" / "yet").type, here);
  std::ofstream(local.path() / "file") << "x";
  EXPECT_EQ(probe_filesystem(local.path() / "file" / "below").type, here) << "through a file";
  fs::create_symlink(local.path() / "nowhere", local.path() / "dangling");
  EXPECT_EQ(probe_filesystem(local.path() / "dangling" / "x").type, here);
  // Another filesystem below the folder: the path's own, not the ancestor's.
  EXPECT_EQ(probe_filesystem("/proc/self/not-there").type, probe_filesystem("/proc").type);
  EXPECT_NE(probe_filesystem("/proc").type, here);
  EXPECT_EQ(probe_filesystem("").type, 0) << "no path: nothing to ask";
}

TEST_F(UserTierFaults, CompactionShrinksTheFileAndKeepsEveryEntry) {
  fill(0, 40, 50 << 10);
  {
    auto store = open();
    for (int i = 5; i < 40; ++i)
      ASSERT_TRUE(store->remove(numbered_key(i)).value());
    auto refused = LmdbStore::compact(dir.path());
    ASSERT_TRUE(refused);
    EXPECT_FALSE(refused->done) << "this process has it open";
  }
  auto compacted = LmdbStore::compact(dir.path());
  ASSERT_TRUE(compacted) << compacted.error().message;
  ASSERT_TRUE(compacted->done) << compacted->reason;
  EXPECT_LT(compacted->file_bytes_after * 4, compacted->file_bytes_before);
  EXPECT_EQ(fs::file_size(dir.path() / "data.mdb"), compacted->file_bytes_after);
  EXPECT_EQ(fs::status(dir.path() / "data.mdb").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::file_size(dir.path() / "lock.mdb"), 65536u) << "the lock file is kept";
  EXPECT_FALSE(fs::exists(dir.path() / "data.mdb.compact"));
  auto store = open();
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(store->get(numbered_key(i)).value()->payload, numbered_entry(i, 50 << 10).payload);
  ASSERT_TRUE(store->put(numbered_key(99), numbered_entry(99, 50 << 10)));
  EXPECT_EQ(store->usage().value().entries, 6u);
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& item : fs::directory_iterator(dir))
    names.insert(item.path().filename().string());
  return names;
}

TEST_F(UserTierFaults, AReaderWithoutALockFileCreatesNothing) {
  fill(0, 3, 1000);
  fs::remove(dir.path() / "lock.mdb");
  fs::remove(dir.path() / "gate");
  const auto before = names_in(dir.path());
  {
    auto store = LmdbStore::open(dir.path(), true).value();
    EXPECT_EQ(store->get(numbered_key(1)).value()->payload, numbered_entry(1, 1000).payload);
    EXPECT_EQ(store->usage().value().entries, 3u);
  }
  EXPECT_EQ(names_in(dir.path()), before);
  EXPECT_FALSE(LmdbStore::open(dir.path() / "absent", true)) << "nor a directory";
  EXPECT_FALSE(fs::exists(dir.path() / "absent"));
}

TEST_F(UserTierFaults, CompactionLeavesAFileInUseByAnotherProcessAlone) {
  fill(0, 10, 50 << 10);
  auto user = test::process_holding_user_tier(dir.path());
  const auto before = fs::file_size(dir.path() / "data.mdb");
  auto compacted = LmdbStore::compact(dir.path());
  ASSERT_TRUE(compacted);
  EXPECT_FALSE(compacted->done);
  EXPECT_NE(compacted->reason.find("other processes have the user tier open"), std::string::npos);
  EXPECT_EQ(fs::file_size(dir.path() / "data.mdb"), before);
}

TEST_F(UserTierFaults, FreedPagesAreReused) {
  auto store = open();
  std::uintmax_t after_first = 0;
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 20; ++i)
      ASSERT_TRUE(store->put(numbered_key(i), numbered_entry(i + round, 100 << 10)));
    for (int i = 0; i < 20; ++i)
      ASSERT_TRUE(store->remove(numbered_key(i)).value());
    if (round == 0)
      after_first = fs::file_size(dir.path() / "data.mdb");
  }
  EXPECT_LE(fs::file_size(dir.path() / "data.mdb"), 2 * after_first);
}

// A get_or_compile whose "compile" returns `bytes` bytes.
Expected<Found> build(Cache& cache, const std::string& name, std::size_t bytes) {
  const Key k = KeyBuilder("opencl").source(name).finish();
  return cache.get_or_compile(k, [bytes] {
    return Expected<Entry>(Entry{"", std::string(bytes, 'k'), {}, 0});
  });
}

TEST_F(UserTierFaults, AReadOnlyFilesystemIsReadAndNeverWritten) {
  const Config config = Config::from_variables({{"JITCACHE_DIR", dir.path().string()}});
  {
    Cache cache(config);
    ASSERT_TRUE(build(cache, "stored", 1000));
  }
  ChildProcess child([&] {
    const std::string where = dir.path().string();
    if (!private_mounts() ||
        ::mount(where.c_str(), where.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, where.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0)
      return k_skip;
    Cache cache(config);
    BuildInfo info;
    auto old = cache.get_or_compile(
        KeyBuilder("opencl").source("stored").finish(), [] { return Expected<Entry>(Error()); },
        &info);
    if (!old || info.tier != "user")
      return 1;
    auto fresh = build(cache, "new", 1000);
    if (!fresh || fresh->entry.payload.size() != 1000)
      return 2;
    cache.flush();
    return 0;
  });
  const int status = child.wait();
  if (status == k_skip)
    GTEST_SKIP() << "no private mount namespace here (needs CAP_SYS_ADMIN)";
  ASSERT_EQ(status, 0) << child.err();
  EXPECT_EQ(count_lines(child.err(), "warning"), 1u) << child.err();
  EXPECT_NE(child.err().find("Read-only file system); using it read-only"), std::string::npos)
      << child.err();
  auto store = LmdbStore::open(dir.path() / "v1", true).value();
  EXPECT_EQ(store->usage().value().entries, 1u);
}

TEST_F(UserTierFaults, AFullDiskStillReturnsEveryKernelAndWarnsOnce) {
  ChildProcess child([&] {
    const fs::path where = dir.path() / "small";
    fs::create_directory(where);
    if (!private_mounts() || ::mount("tmpfs", where.c_str(), "tmpfs", 0, "size=1m,mode=0700") != 0)
      return k_skip;
    const Config config = Config::from_variables({{"JITCACHE_DIR", where.string()}});
    {
      Cache cache(config);
      if (!build(cache, "fits", 300 << 10))
        return 1;
      for (const char* name : {"too big", "too big as well"}) {
        auto got = build(cache, name, 800 << 10);
        if (!got || got->entry.payload.size() != (800u << 10))
          return 2;
      }
      if (cache.session_stats().get("opencl", Counter::store_errors) != 2)
        return 3;
    }
    // What was stored before the disk filled up is intact and served.
    Cache cache(config);
    BuildInfo info;
    auto again = cache.get_or_compile(
        KeyBuilder("opencl").source("fits").finish(), [] { return Expected<Entry>(Error()); },
        &info);
    if (!again || info.tier != "user" || again->entry.payload.size() != (300u << 10))
      return 4;
    return 0;
  });
  const int status = child.wait();
  if (status == k_skip)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN)";
  ASSERT_EQ(status, 0) << child.err();
  EXPECT_EQ(count_lines(child.err(), "No space left on device"), 1u) << child.err();
  EXPECT_NE(child.err().find("the kernel is still used, but not kept"), std::string::npos);
}

// A damaged entry is read on several paths before it is replaced (the tier walk, the walk
// before the compile lease and the one after it; lookups; caches opened again): it is counted
// and warned about once per process, until it is written again.
TEST_F(UserTierFaults, ADamagedEntryIsWarnedAboutAndCountedOnce) {
  const Config config = Config::from_variables({{"JITCACHE_DIR", dir.path().string()}});
  const Config read_only =
      Config::from_variables({{"JITCACHE_DIR", dir.path().string()}, {"JITCACHE_READONLY", "1"}});
  const std::string marker = "UNIQUE-MARKER-PAYLOAD-0123456789";
  const Key k = KeyBuilder("opencl").source("damaged").finish();
  const auto compile = [&] { return Expected<Entry>(Entry{"", marker, {}, 0}); };
  {
    Cache cache(config);
    ASSERT_TRUE(cache.get_or_compile(k, compile));
  }
  const auto damage = [&] {
    std::fstream file(dir.path() / "v1" / "data.mdb",
                      std::ios::in | std::ios::out | std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(file)), {});
    ASSERT_NE(data.find(marker), std::string::npos);
    for (auto at = data.find(marker); at != std::string::npos; at = data.find(marker, at + 1)) {
      file.seekp(static_cast<std::streamoff>(at + 5));
      file.put('#');
    }
  };
  damage();
  testing::internal::CaptureStderr();
  std::uint64_t corrupt = 0;
  for (const Config& with : {read_only, read_only, config}) {
    Cache cache(with);
    EXPECT_FALSE(cache.lookup(k));
    auto got = cache.get_or_compile(k, compile);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->entry.payload, marker);
    corrupt += cache.session_stats().get("opencl", Counter::corrupt);
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_lines(err, k.digest.hex()), 1u) << err;
  EXPECT_EQ(corrupt, 1u);
  {
    Cache cache(config);
    BuildInfo info;
    ASSERT_TRUE(cache.get_or_compile(k, compile, &info));
    EXPECT_EQ(info.tier, "user") << "replaced by the writable cache's compile";
  }
  damage();
  testing::internal::CaptureStderr();
  {
    Cache cache(config);
    ASSERT_TRUE(cache.get_or_compile(k, compile));
    EXPECT_EQ(cache.session_stats().get("opencl", Counter::corrupt), 1u);
  }
  err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_lines(err, k.digest.hex()), 1u) << "damage to the new entry is new: " << err;
}

} // namespace
} // namespace jitcache
