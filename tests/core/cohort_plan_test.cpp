// The cohort's plan (core/cohort): who provides each key of a job, and to whom. Computed alike
// on every rank from what each holds, so it is a pure function, tested here without MPI.
#include "core/cohort/cohort.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
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
  Holding holding{node, 0, {}};
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

Holding on_host(const std::string& host, std::uint32_t slots, std::vector<int> wanted) {
  Holding holding = ranks_holding(host + "\n/rank" + std::to_string(wanted.size()), wanted);
  holding.compile_slots = slots;
  return holding;
}

std::map<int, int> compiles_by_rank(const std::vector<Task>& tasks) {
  std::map<int, int> compiles;
  for (const Task& task : tasks)
    compiles[task.provider] += task.compile;
  return compiles;
}

TEST(CohortPlan, CompilesOfAHostGoToNoMoreRanksThanItsCompileSlots) {
  // 16 ranks of one 2-slot host, each asking for the same 5 keys: 2 ranks compile, 3 and 2.
  std::vector<Holding> ranks(16, on_host("n1", 2, {1, 2, 3, 4, 5}));
  const std::map<int, int> compiles = compiles_by_rank(plan_cohort(ranks));
  ASSERT_EQ(compiles.size(), 2u);
  std::vector<int> counts;
  for (auto [rank, count] : compiles)
    counts.push_back(count);
  std::sort(counts.begin(), counts.end());
  EXPECT_EQ(counts, (std::vector<int>{2, 3}));
}

TEST(CohortPlan, CompileSlotsAreCountedPerHostAndTheFewestReportedHolds) {
  // Two hosts of 4 ranks, each host 2 slots (one rank of n2 reports 1: n2 takes 1 compiler);
  // 6 keys asked by every rank: 2 compilers on n1, 1 on n2, the compiles spread over the three.
  std::vector<Holding> ranks;
  for (int rank = 0; rank < 8; ++rank)
    ranks.push_back(on_host(rank < 4 ? "n1" : "n2", rank == 6 ? 1 : 2, {1, 2, 3, 4, 5, 6}));
  const std::map<int, int> compiles = compiles_by_rank(plan_cohort(ranks));
  int on_n1 = 0, on_n2 = 0;
  for (auto [rank, count] : compiles) {
    EXPECT_EQ(count, 2) << "rank " << rank;
    ++(rank < 4 ? on_n1 : on_n2);
  }
  EXPECT_EQ(on_n1, 2);
  EXPECT_EQ(on_n2, 1);
}

TEST(CohortPlan, AKeyAskedOnlyByRanksOfAFullHostIsStillCompiledByOneOfThem) {
  // One slot on the host: rank 0 compiles key 1; key 2 is asked only by rank 1, which must
  // compile it (no other rank can), past the cap.
  const std::vector<Holding> ranks{on_host("n1", 1, {1}), on_host("n1", 1, {2})};
  const std::vector<Task> tasks = plan_cohort(ranks);
  EXPECT_EQ(task_of(tasks, 1).provider, 0);
  EXPECT_EQ(task_of(tasks, 2).provider, 1);
  EXPECT_TRUE(task_of(tasks, 2).compile);
}

TEST(CohortPlan, ARankThatAsksNothingProvidesNothing) {
  const std::vector<Holding> ranks{ranks_holding("a", {}), ranks_holding("a", {3, 4}),
                                   ranks_holding("a", {})};
  for (const Task& task : plan_cohort(ranks))
    EXPECT_EQ(task.provider, 1);
}

} // namespace
} // namespace jitcache::detail
