// The host's cap on compiles at once (JITCACHE_MAX_COMPILES): CompileSlot, a semaphore of
// lock bytes in the user tier's folder that a killed holder never keeps.
#include "core/engine/compile_slot.hpp"

#include "tests/support/temp_dir.hpp"

#include <jitcache/config.hpp>

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <vector>

namespace jitcache::detail {
namespace {

TEST(CompileSlot, NoMoreHoldersThanSlotsAndAFreedSlotIsTakenAgain) {
  const test::TempDir dir;
  auto cache_dir = CacheDir::open(dir.path());
  ASSERT_TRUE(cache_dir);
  std::vector<std::unique_ptr<CompileSlot>> held;
  std::set<unsigned> indices;
  for (int i = 0; i < 3; ++i) {
    auto slot = CompileSlot::try_acquire(*cache_dir, 3);
    ASSERT_TRUE(slot && *slot);
    indices.insert((*slot)->index());
    held.push_back(std::move(*slot));
  }
  EXPECT_EQ(indices, (std::set<unsigned>{0, 1, 2}));
  auto fourth = CompileSlot::try_acquire(*cache_dir, 3);
  ASSERT_TRUE(fourth);
  EXPECT_EQ(*fourth, nullptr);
  held.erase(held.begin());
  auto again = CompileSlot::try_acquire(*cache_dir, 3);
  ASSERT_TRUE(again && *again);
  auto blocking = CompileSlot::acquire(*cache_dir, 4); // a fourth slot is free at once
  ASSERT_TRUE(blocking && *blocking);
}

TEST(CompileSlot, AKilledHolderLeavesItsSlotFree) {
  const test::TempDir dir;
  auto cache_dir = CacheDir::open(dir.path());
  ASSERT_TRUE(cache_dir);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto slot = CompileSlot::try_acquire(*cache_dir, 1);
    const char byte = slot && *slot ? '1' : '0';
    static_cast<void>(::write(ready[1], &byte, 1));
    ::pause(); // holds the slot until killed
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, '1');
  auto while_held = CompileSlot::try_acquire(*cache_dir, 1);
  ASSERT_TRUE(while_held);
  EXPECT_EQ(*while_held, nullptr);
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  auto after = CompileSlot::try_acquire(*cache_dir, 1);
  ASSERT_TRUE(after);
  EXPECT_NE(*after, nullptr);
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(CompileSlot, TheCountIsTheVariableElseTheCores) {
  EXPECT_EQ(Config::from_variables({{"JITCACHE_MAX_COMPILES", "3"}}).max_compiles, 3u);
  const Config bad = Config::from_variables({{"JITCACHE_MAX_COMPILES", "0"}});
  EXPECT_EQ(bad.max_compiles, 0u);
  ASSERT_EQ(bad.warnings.size(), 1u);
  EXPECT_NE(bad.warnings[0].find("JITCACHE_MAX_COMPILES"), std::string::npos) << bad.warnings[0];
  EXPECT_EQ(CompileSlot::default_count(3), 3u);
  EXPECT_GE(CompileSlot::default_count(0), 1u);
}

} // namespace
} // namespace jitcache::detail
