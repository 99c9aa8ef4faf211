// A process-wide memory (remembered scans and headers, stored digests, parts, proven stamp sets)
// is guarded by ForkSafeMutex: a fork()ed child must find it unlocked and whole, whatever the
// parent's other threads were doing, or its first key waits forever for a thread it does not
// have (a CuPy or PyOpenCL program forking its workers while a store runs on a thread).
#include "core/engine/proven_stamps.hpp"
#include "core/key/dependencies.hpp"
#include "core/key/file_stamp.hpp"
#include "core/key/key_fields.hpp"
#include "core/key/known_parts.hpp"
#include "core/support/fork_safe_mutex.hpp"
#include "core/support/log.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <jitcache/key.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace jitcache {
namespace {

namespace fs = std::filesystem;
using detail::ForkSafeMutex;

// The status of a child (test::ChildProcess) running `body`: 0 when it returned true within
// `seconds`, 128 + SIGALRM when it hung.
template <class Body> int in_child(Body body, unsigned seconds = 30) {
  test::ChildProcess child([&] {
    ::alarm(seconds);
    return body() ? 0 : 1;
  });
  return child.wait();
}

TEST(ForkSafeMutex, AForkWaitsForTheThreadHoldingItAndTheChildTakesIt) {
  ForkSafeMutex mutex;
  std::atomic<bool> held{false}, forking{false}, released{false}, forked{false};
  std::thread holder([&] {
    {
      const std::lock_guard<ForkSafeMutex> lock(mutex);
      held = true;
      while (!forking)
        std::this_thread::yield();
      // The fork below has begun (or is about to): it may not complete before this unlock.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      released = true;
    }
    while (!forked) // alive at the fork: a thread that ended unjoined is a leak to ThreadSanitizer
      std::this_thread::yield();
  });
  while (!held)
    std::this_thread::yield();
  forking = true;
  const int status = in_child([&] {
    const std::lock_guard<ForkSafeMutex> lock(mutex);
    return released.load(); // the child's copy of the flag: set before the parent forked
  });
  EXPECT_TRUE(released) << "fork() returned while another thread held the mutex";
  forked = true;
  holder.join();
  EXPECT_EQ(status, 0) << (status == 128 + SIGALRM ? "the child waited for the lock forever"
                                                   : "the child saw the lock taken early");
  const std::lock_guard<ForkSafeMutex> parent(mutex); // and the parent's is unlocked
}

TEST(ForkSafeMutex, NestedInTheOrderTheyWereMadeNeverDeadlockAFork) {
  // ProvenStamps takes its own mutex, then its watch's, made before it: fork's prepare step must
  // take them in that order, or it and a thread holding the first would wait for each other.
  ::alarm(120); // a fork deadlocked in its prepare step ends this test's process, not CI's run
  auto inner = std::make_unique<ForkSafeMutex>();
  auto outer = std::make_unique<ForkSafeMutex>();
  std::atomic<bool> stop{false};
  std::atomic<long> rounds{0};
  std::thread nesting([&] {
    while (!stop) {
      const std::lock_guard<ForkSafeMutex> a(*outer);
      const std::lock_guard<ForkSafeMutex> b(*inner);
      ++rounds;
    }
  });
  for (int i = 0; i < 50; ++i)
    ASSERT_EQ(in_child([&] {
                const std::lock_guard<ForkSafeMutex> a(*outer);
                const std::lock_guard<ForkSafeMutex> b(*inner);
                return true;
              }),
              0)
        << "fork " << i;
  stop = true;
  nesting.join();
  EXPECT_GT(rounds.load(), 0);
  ::alarm(0);
}

// What one key of a source with headers does to the process's memories, and the parts'.
bool use_the_process_memories(const fs::path& include, int i) {
  KeyBuilder builder("cuda");
  const auto deps = detail::add_source_fields(
      builder,
      detail::SourceInputs{"#include <a.h>\n#include <b.h>\n", "-I" + include.string(), {}, {}});
  const std::string big(5000, static_cast<char>('a' + i % 26));
  const std::string stored = detail::stored_value(big + std::to_string(i % 7));
  auto& parts = detail::KnownParts::process();
  const Digest name = Digest::of(std::to_string(i % 50));
  parts.add_bytes(name, std::make_shared<const std::string>(stored));
  const bool proven = detail::ProvenStamps::process().hold(detail::encode_stamps(deps.read));
  return deps.read.size() == 2 && parts.bytes(name) != nullptr && proven;
}

TEST(ForkSafeMutex, ChildrenForkedWhileThreadsUseEveryProcessMemoryBuildTheirKeys) {
  test::TempDir dir;
  const fs::path include = dir.path() / "include";
  fs::create_directories(include);
  std::ofstream(include / "a.h") << "#pragma once\nint a;\n";
  std::ofstream(include / "b.h") << std::string(6000, ' ') << "\nint b;\n";
  std::atomic<bool> stop{false};
  std::atomic<int> failed{0};
  std::vector<std::thread> users;
  for (int t = 0; t < 3; ++t)
    users.emplace_back([&, t] {
      for (int i = t; !stop; i += 3)
        failed += !use_the_process_memories(include, i);
    });
  int hung = 0, wrong = 0;
  for (int i = 0; i < 60 && !hung; ++i) { // a hung child costs its alarm's 30 s: one is enough
    const int status = in_child([&] { return use_the_process_memories(include, i); });
    hung += status == 128 + SIGALRM;
    wrong += status != 0 && status != 128 + SIGALRM;
  }
  stop = true;
  for (std::thread& user : users)
    user.join();
  EXPECT_EQ(hung, 0) << "children that waited forever for a lock of a thread they do not have";
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(failed.load(), 0);
}

TEST(ForkSafeMutex, ChildrenForkedWhileAThreadLogsWriteTheirLine) {
  // The log's lock too: a child whose first warning waited for a thread it does not have hangs.
  const int saved = ::dup(STDERR_FILENO);
  const int null = ::open("/dev/null", O_WRONLY);
  ASSERT_GE(null, 0);
  ::dup2(null, STDERR_FILENO);
  std::atomic<bool> stop{false};
  std::thread logger([&] {
    while (!stop) {
      log::write(LogLevel::warn, "a line from a thread of the parent");
      log::write_once(LogLevel::warn, "fork-test", "once");
    }
  });
  int hung = 0, wrong = 0;
  for (int i = 0; i < 40 && !hung; ++i) {
    const int status = in_child([&] {
      log::write(LogLevel::warn, "a line from the child");
      log::write_once(LogLevel::warn, "fork-test-child", "once from the child");
      return true;
    });
    hung += status == 128 + SIGALRM;
    wrong += status != 0 && status != 128 + SIGALRM;
  }
  stop = true;
  logger.join();
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(null);
  EXPECT_EQ(hung, 0) << "children that waited forever for the log's lock";
  EXPECT_EQ(wrong, 0);
}

} // namespace
} // namespace jitcache
