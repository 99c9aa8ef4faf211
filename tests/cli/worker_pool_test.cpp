// The worker processes of `jitcache warm --jobs N` (tools/jitcache/worker_pool): every item is
// answered once, by whichever worker is free; a worker that dies loses only the item it held
// (named with how it died), and the others take the rest; none started means nothing done.
#include "tools/jitcache/worker_pool.hpp"

#include "tests/support/child_process.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <unistd.h>

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

// The worker's side: what else the work writes to standard output (a runtime's printf, a child
// process's output; here without a newline, which used to run into the answer's line and leave
// the parent waiting for ever) goes to standard error, and an answer that is not UTF-8 is
// replaced, not a throw that kills the worker.
TEST(WorkerPoolTest, AWorkersStrayOutputAndBytesThatAreNotUtf8NeverReachItsAnswers) {
  int in[2], out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  test::ChildProcess child([&] {
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    for (int fd : {in[0], in[1], out[0], out[1]})
      ::close(fd);
    return serve_items(3, [](std::size_t item) {
      static_cast<void>(::write(STDOUT_FILENO, "stray-write", 11));
      std::printf("stray-printf");
      std::cout << "stray-cout";
      return nlohmann::json{{"message", "caf\xe9 " + std::to_string(item)}};
    });
  });
  ::close(in[0]);
  ::close(out[1]);
  const std::string items = "0\n1\n2\n";
  ASSERT_EQ(::write(in[1], items.data(), items.size()), static_cast<ssize_t>(items.size()));
  ::close(in[1]);
  std::string answers;
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;)
    answers.append(buffer, static_cast<std::size_t>(n));
  ::close(out[0]);
  EXPECT_EQ(child.wait(), 0) << child.err();
  std::istringstream lines(answers);
  std::size_t count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    const auto answer = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(answer.is_object()) << line;
    EXPECT_EQ(answer["item"], count);
    EXPECT_EQ(answer["message"], "caf\xef\xbf\xbd " + std::to_string(count)); // U+FFFD
  }
  EXPECT_EQ(count, 3u) << answers;
  for (const char* stray : {"stray-write", "stray-printf", "stray-cout"})
    EXPECT_NE(child.err().find(stray), std::string::npos) << stray << " in: " << child.err();
}

} // namespace
} // namespace jitcache::cli
