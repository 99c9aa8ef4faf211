// The user tier after a fault inside LMDB: the environment is poisoned (never touched again by
// this process), other processes are not blocked by it, the next open starts fresh, and a
// write that keeps growing the map is stopped.
#include "core/support/fault_guard.hpp"
#include "core/tiers/user/lmdb_env.hpp"
#include "core/tiers/user/lmdb_store.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/samples.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <lmdb.h>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace jitcache {

using detail::CacheDir;
using detail::k_poisoned;
using detail::k_runaway;
using detail::LmdbStore;
using detail::open_env;
namespace {
using test::has_aside_file;
using test::numbered_entry;
using test::numbered_key;

namespace fs = std::filesystem;
using test::ChildProcess;

// Stands for LMDB touching a damaged page: a read that faults.
void touch_forbidden_page() {
  static char* page =
      static_cast<char*>(::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  (void)*static_cast<volatile char*>(page);
}

class UserTierGuard : public ::testing::Test {
protected:
  std::shared_ptr<LmdbStore> open() { return LmdbStore::open(dir.path(), false).value(); }
  test::TempDir dir;
};

TEST_F(UserTierGuard, AFaultInATransactionPoisonsTheEnvironmentAndTheNextOpenStartsFresh) {
  auto store = open();
  ASSERT_TRUE(store->put(numbered_key(1), numbered_entry(1, 1000)));
  ASSERT_TRUE(store->put_records({{numbered_key(2), "record"}}));
  testing::internal::CaptureStderr();
  // A record is used in place, inside the read transaction: a fault there is the store's.
  auto seen =
      store->visit_record(numbered_key(2), [](std::string_view) { touch_forbidden_page(); });
  ASSERT_FALSE(seen);
  EXPECT_EQ(seen.error().code, ErrorCode::corrupt);
  // Fails fast from now on, without LMDB.
  auto got = store->get(numbered_key(1));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, ErrorCode::corrupt);
  EXPECT_NE(got.error().message.find("does not use it any more"), std::string::npos);
  EXPECT_FALSE(store->put(numbered_key(3), numbered_entry(3, 1000)));
  const std::string err = testing::internal::GetCapturedStderr();
  std::size_t warnings = 0;
  for (auto at = err.find("is damaged (SIGSEGV at 0x"); at != std::string::npos;
       at = err.find("is damaged (SIGSEGV at 0x", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << err;
  EXPECT_TRUE(fs::exists(dir.path() / "damaged"));

  // The gate was released: a new open in this process moves the file aside, starts fresh.
  auto fresh = open();
  EXPECT_TRUE(has_aside_file(dir.path()));
  EXPECT_FALSE(fs::exists(dir.path() / "damaged"));
  ASSERT_TRUE(fresh->put(numbered_key(4), numbered_entry(4, 1000)));
  EXPECT_TRUE(fresh->get(numbered_key(4)).value().has_value());
  EXPECT_FALSE(fresh->get(numbered_key(1)).value().has_value());
  EXPECT_FALSE(store->get(numbered_key(4))); // the old handle stays poisoned
}

TEST_F(UserTierGuard, AnAssertionInAWriteIsContainedAndNamed) {
  auto env = open_env(CacheDir::open(dir.path()).value(), false, {}).value();
  testing::internal::CaptureStderr();
  // What LMDB's assertion callback does (create_env installs it): fault::escape.
  const int rc = env->transact(true, [](MDB_txn*) -> int {
    fault::escape("mdb.c:7279: Assertion 'mp->mp_upper >= mp->mp_lower' failed in mdb_node_add()");
    return MDB_SUCCESS;
  });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, fault::k_fault);
  EXPECT_TRUE(env->poisoned);
  EXPECT_NE(err.find("Assertion 'mp->mp_upper >= mp->mp_lower' failed"), std::string::npos) << err;
  EXPECT_EQ(env->transact(false, [](MDB_txn*) { return MDB_SUCCESS; }), k_poisoned);
}

TEST_F(UserTierGuard, AProcessPoisonedMidWriteDoesNotBlockAnotherProcesssWrites) {
  ASSERT_TRUE(open()->put(numbered_key(1), numbered_entry(1, 1000)));
  // The gate: A blocks reading it until the parent writes a byte, once B is about to write.
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  // A: faults inside a write transaction (holding LMDB's writer mutex), then stays alive.
  ChildProcess a([&] {
    ::alarm(60); // a parent that never opens the gate ends A, not the test
    auto env = open_env(CacheDir::open(dir.path()).value(), false, {}).value();
    const int rc = env->transact(true, [&](MDB_txn*) {
      ChildProcess::tell_parent("writing");
      char byte = 0;
      while (::read(gate[0], &byte, 1) < 0 && errno == EINTR) {
      }
      touch_forbidden_page();
      return MDB_SUCCESS;
    });
    ChildProcess::tell_parent(rc == fault::k_fault ? "contained" : "not contained");
    for (;;)
      ::pause();
    return 0;
  });
  ASSERT_EQ(a.next_message(), std::optional<std::string>("writing")) << a.err();
  // B: writes while A holds the writer mutex; it must get it once A has faulted.
  ChildProcess b([&] {
    ::alarm(60); // a hang ends as SIGALRM, not as a test that never ends
    ChildProcess::tell_parent("starting");
    auto store = LmdbStore::open(dir.path(), false);
    if (!store)
      return 2;
    return (*store)->put(numbered_key(2), numbered_entry(2, 1000)) ? 0 : 3;
  });
  ASSERT_EQ(b.next_message(), std::optional<std::string>("starting"));
  ASSERT_EQ(::write(gate[1], "g", 1), 1);
  ::close(gate[0]);
  ::close(gate[1]);
  EXPECT_EQ(a.next_message(), std::optional<std::string>("contained")) << a.err();
  EXPECT_EQ(b.wait(), 0) << b.err();
  a.kill(SIGKILL);
  a.wait();
  // The next process moves the file A found damaged aside and starts fresh.
  auto fresh = open();
  EXPECT_TRUE(has_aside_file(dir.path()));
  EXPECT_TRUE(fresh->put(numbered_key(3), numbered_entry(3, 1000)));
}

TEST_F(UserTierGuard, AWriteThatKeepsGrowingTheMapIsStoppedAsDamage) {
  LmdbStore::Options options;
  options.map_size = 1 << 20;
  auto env = open_env(CacheDir::open(dir.path()).value(), false, options).value();
  testing::internal::CaptureStderr();
  // A transaction that asks for pages without end, as one walking a damaged free list does:
  // no healthy write of 0 bytes into a small file needs a map of 64 MiB and more.
  const std::string value(1 << 20, 'x');
  const int rc = env->transact(true, [&](MDB_txn* txn) {
    for (int i = 0;; ++i) {
      MDB_val k{sizeof i, &i}, v{value.size(), const_cast<char*>(value.data())};
      if (int r = mdb_put(txn, env->entries, &k, &v, 0); r != MDB_SUCCESS)
        return r;
    }
  });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, k_runaway);
  EXPECT_TRUE(env->poisoned);
  EXPECT_NE(err.find("the file must be damaged"), std::string::npos) << err;
  EXPECT_LT(fs::file_size(dir.path() / "data.mdb"), std::uint64_t(1) << 20);
}

} // namespace
} // namespace jitcache
