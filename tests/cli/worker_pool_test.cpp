// The worker processes of `jitcache warm --jobs N` (tools/jitcache/worker_pool): every item is
// answered once, by whichever worker is free; a worker that dies loses only the item it held
// (named with how it died), and the others take the rest; none started means nothing done.
#include "tools/jitcache/worker_pool.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace jitcache::cli {
namespace {

struct Outcomes {
  std::map<std::size_t, nlohmann::json> done;
  std::map<std::size_t, std::string> lost;
  WorkerPoolCalls calls() {
    WorkerPoolCalls c;
    c.done = [this](std::size_t i, const nlohmann::json& answer) {
      EXPECT_TRUE(done.emplace(i, answer).second) << "item " << i << " answered twice";
    };
    c.lost = [this](std::size_t i, const std::string& why) {
      EXPECT_TRUE(lost.emplace(i, why).second) << "item " << i << " lost twice";
    };
    return c;
  }
};

// A worker in sh: answers each item with its pid, or, given item `die`, kills itself.
std::vector<std::string> worker(int die = -1) {
  return {"/bin/sh", "-c",
          "while read i; do [ \"$i\" = " + std::to_string(die) +
              " ] && kill -9 $$; echo \"{\\\"item\\\": $i, \\\"pid\\\": $$}\"; done"};
}

TEST(WorkerPoolTest, EveryItemIsAnsweredOnceByTheWorkers) {
  Outcomes out;
  EXPECT_EQ(run_in_workers(worker(), 3, 40, out.calls()), 3u);
  EXPECT_EQ(out.done.size(), 40u);
  EXPECT_TRUE(out.lost.empty());
  std::set<int> pids;
  for (const auto& [i, answer] : out.done) {
    EXPECT_EQ(answer.at("item"), i);
    pids.insert(answer.at("pid").get<int>());
  }
  EXPECT_GE(pids.size(), 1u);
  EXPECT_LE(pids.size(), 3u);
}

TEST(WorkerPoolTest, AWorkerThatDiesLosesOnlyItsItemAndTheOthersTakeTheRest) {
  Outcomes out;
  EXPECT_EQ(run_in_workers(worker(7), 2, 20, out.calls()), 2u);
  ASSERT_EQ(out.lost.size(), 1u);
  EXPECT_EQ(out.lost.begin()->first, 7u);
  EXPECT_EQ(out.lost.begin()->second,
            "its worker process killed by signal 9 (Killed) before answering");
  EXPECT_EQ(out.done.size(), 19u);
}

TEST(WorkerPoolTest, WhenEveryWorkerDiesTheItemsLeftAreLostSayingSo) {
  Outcomes out;
  EXPECT_EQ(run_in_workers({"/bin/sh", "-c", "read i; exit 3"}, 2, 5, out.calls()), 2u);
  EXPECT_TRUE(out.done.empty());
  ASSERT_EQ(out.lost.size(), 5u);
  EXPECT_EQ(out.lost.at(0), "its worker process exited with status 3 before answering");
  EXPECT_EQ(out.lost.at(4), "no worker process was left to take it");
}

TEST(WorkerPoolTest, NoWorkerStartedIsZeroAndNothingDone) {
  Outcomes out;
  EXPECT_EQ(run_in_workers({"/nonexistent/jitcache"}, 2, 5, out.calls()), 0u);
  EXPECT_TRUE(out.done.empty());
  EXPECT_TRUE(out.lost.empty()); // the caller does the work itself
}

} // namespace
} // namespace jitcache::cli
