// The cohort's plan (core/cohort): who provides each key of a job, and to whom. Computed alike
// on every rank from what each holds, so it is a pure function, tested here without MPI.
#include "core/cohort/cohort.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace jitcache::detail {
namespace {

Digest key(int n) {
  return Digest::of("kernel " + std::to_string(n));
}

Holding ranks_holding(const std::string& node, std::vector<int> wanted,
                      std::vector<int> held = {}) {
  Holding holding{node, {}};
  for (int n : wanted)
    holding.wants.push_back({key(n), std::find(held.begin(), held.end(), n) != held.end()});
  return holding;
}

const Task& task_of(const std::vector<Task>& tasks, int n) {
  return *std::find_if(tasks.begin(), tasks.end(),
                       [&](const Task& task) { return task.key == key(n); });
}

TEST(CohortPlan, EachKeyOnceCompilesSpreadAcrossTheRanksThatAskedForThem) {
  // 16 ranks, one node, 16 distinct keys, each asked by two ranks.
  std::vector<Holding> ranks;
  for (int rank = 0; rank < 16; ++rank)
    ranks.push_back(ranks_holding("host\n/cache", {rank, (rank + 1) % 16}));
  const std::vector<Task> tasks = plan_cohort(ranks);
  ASSERT_EQ(tasks.size(), 16u);
  std::map<int, int> compiles;
  for (const Task& task : tasks) {
    EXPECT_TRUE(task.compile);
    ++compiles[task.provider];
    EXPECT_EQ(task.receives.size(), 1u); // the other rank that asked
    EXPECT_TRUE(task.stores.empty());    // one node: the compile stored it there
  }
  EXPECT_EQ(compiles.size(), 16u); // one compile on each rank, none on two
  EXPECT_TRUE(std::is_sorted(tasks.begin(), tasks.end(),
                             [](const Task& a, const Task& b) { return a.key < b.key; }));
}

TEST(CohortPlan, AKeyARankHoldsIsHandedOutByAHolderAndNotSentToHolders) {
  const std::vector<Holding> ranks{ranks_holding("a", {1, 2}), ranks_holding("a", {1}, {1}),
                                   ranks_holding("b", {1}, {1}), ranks_holding("b", {1, 2})};
  const std::vector<Task> tasks = plan_cohort(ranks);
  const Task& held = task_of(tasks, 1);
  EXPECT_FALSE(held.compile);
  EXPECT_TRUE(held.provider == 1 || held.provider == 2);
  EXPECT_EQ(held.receives, (std::vector<int>{0, 3}));
  EXPECT_TRUE(held.stores.empty()); // both nodes have a holder
  const Task& missing = task_of(tasks, 2);
  EXPECT_TRUE(missing.compile);
  EXPECT_TRUE(missing.provider == 0 || missing.provider == 3);
}

TEST(CohortPlan, OneRankPerOtherNodeStoresIntoItsUserTier) {
  // Nodes a, a, b, b, c: key 7 asked by all, held by none.
  std::vector<Holding> ranks;
  for (const char* node : {"a", "a", "b", "b", "c"})
    ranks.push_back(ranks_holding(node, {7}));
  const Task task = plan_cohort(ranks).front();
  ASSERT_TRUE(task.compile);
  std::vector<std::string> stored_on;
  for (int rank : task.stores)
    stored_on.push_back(ranks[rank].node);
  std::vector<std::string> others;
  for (const char* node : {"a", "b", "c"})
    if (node != ranks[task.provider].node)
      others.push_back(node);
  EXPECT_EQ(stored_on, others);
  EXPECT_EQ(task.receives.size(), 4u);
}

TEST(CohortPlan, ARankThatAsksNothingProvidesNothing) {
  const std::vector<Holding> ranks{ranks_holding("a", {}), ranks_holding("a", {3, 4}),
                                   ranks_holding("a", {})};
  for (const Task& task : plan_cohort(ranks))
    EXPECT_EQ(task.provider, 1);
}

} // namespace
} // namespace jitcache::detail
