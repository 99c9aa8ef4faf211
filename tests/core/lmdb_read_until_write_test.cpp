// A writable user tier that exists is opened read-only until the process's first write
// (LmdbStore::Env::reading_until_write): a process that only hits never opens the data file for
// writing; the first write, from any thread, opens it writable while other threads read; the
// read-only environment stays open beside it, so this process keeps its LMDB locks, and another
// process's writes never reuse the pages of a snapshot it reads.
#include "core/tiers/user/lmdb_store.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/lmdb_writer.hpp"
#include "tests/support/lock_holder.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/thread_syscall.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace jitcache {

using detail::LmdbStore;

namespace {

namespace fs = std::filesystem;
using test::ChildProcess;
using test::lmdb_write_transaction;
using test::lock_holder;

// The access modes (O_RDONLY, O_WRONLY, O_RDWR) of this process's descriptors of `file`.
std::vector<int> access_modes_of(const fs::path& file) {
  std::vector<int> modes;
  const fs::path target = fs::canonical(file);
  for (const auto& fd : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(fd.path(), ec) != target)
      continue;
    std::ifstream info("/proc/self/fdinfo/" + fd.path().filename().string());
    for (std::string word; info >> word;)
      if (word == "flags:") {
        std::string octal;
        info >> octal;
        modes.push_back(static_cast<int>(std::stoul(octal, nullptr, 8)) & O_ACCMODE);
        break;
      }
  }
  return modes;
}

// A payload of `size` bytes that names `seed` throughout (over LMDB's page size: overflow pages).
std::string filled_with(const std::string& seed, std::size_t size = 20000) {
  std::string out;
  while (out.size() < size)
    out += seed + ";";
  out.resize(size);
  return out;
}

std::string payload_in(LmdbStore& store, const Digest& key) {
  std::string got = "(none)";
  auto seen = store.visit(key, [&](const EntryView& view) { got = std::string(view.payload); });
  return seen ? got : "(error: " + seen.error().message + ")";
}

class LmdbReadUntilWrite : public ::testing::Test {
protected:
  void SetUp() override {
    ChildProcess maker([&] { // LMDB: one environment per file per process, so another one
      auto store = LmdbStore::open(lmdb_dir(), false);
      return store && (*store)->put(shared, Entry{"opencl", filled_with("shared")}) ? 0 : 1;
    });
    ASSERT_EQ(maker.wait(), 0) << maker.err();
  }
  fs::path lmdb_dir() const { return dir.path() / "v1"; }
  test::TempDir dir;
  const Digest shared = Digest::of("shared");
};

TEST_F(LmdbReadUntilWrite, AProcessThatOnlyReadsNeverOpensTheDataFileForWriting) {
  ChildProcess reader([&] {
    auto store = LmdbStore::open(lmdb_dir(), false);
    if (!store || payload_in(**store, shared) != filled_with("shared"))
      return 1;
    for (int mode : access_modes_of(lmdb_dir() / "data.mdb"))
      if (mode != O_RDONLY)
        return 2; // opened for writing before any write
    if (!(*store)->put(Digest::of("own"), Entry{"opencl", "BIN"}))
      return 3;
    bool writable = false;
    for (int mode : access_modes_of(lmdb_dir() / "data.mdb"))
      writable = writable || mode != O_RDONLY;
    if (!writable)
      return 4; // the write did not go through a writable environment
    return payload_in(**store, Digest::of("own")) == "BIN" &&
                   payload_in(**store, shared) == filled_with("shared")
               ? 0
               : 5;
  });
  EXPECT_EQ(reader.wait(), 0) << reader.err();
  auto after = LmdbStore::open(lmdb_dir(), true);
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(payload_in(**after, Digest::of("own")), "BIN");
}

// Eight threads read and write at once from the open on: whichever writes first opens the
// environment for writing while the others read (TSan runs this too).
TEST_F(LmdbReadUntilWrite, TheFirstWriteOfOneThreadWhileOthersReadLosesNothing) {
  ChildProcess process([&] {
    auto store = LmdbStore::open(lmdb_dir(), false);
    if (!store)
      return 1;
    constexpr int k_threads = 8, k_rounds = 20;
    std::atomic<int> ready{0}, wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < k_threads; ++t)
      threads.emplace_back([&, t] {
        ++ready;
        while (ready.load() < k_threads) {
        }
        for (int round = 0; round < k_rounds; ++round) {
          if (payload_in(**store, shared) != filled_with("shared"))
            ++wrong;
          const std::string name = std::to_string(t) + "." + std::to_string(round);
          if (t % 2 == 0 &&
              !(*store)->put(Digest::of(name), Entry{"opencl", filled_with(name, 100)}))
            ++wrong;
        }
      });
    for (std::thread& thread : threads)
      thread.join();
    return wrong.load() == 0 ? 0 : 2;
  });
  ASSERT_EQ(process.wait(), 0) << process.err();
  auto after = LmdbStore::open(lmdb_dir(), true);
  ASSERT_TRUE(after) << after.error().message;
  for (int t = 0; t < 8; t += 2)
    for (int round = 0; round < 20; ++round) {
      const std::string name = std::to_string(t) + "." + std::to_string(round);
      EXPECT_EQ(payload_in(**after, Digest::of(name)), filled_with(name, 100)) << name;
    }
}

// The process that opened the environment for writing alone (so LMDB initialised the lock file
// for it) keeps its locks: another process that opens the tier afterwards, deletes the entry it
// reads and writes many others, never reuses the pages of its snapshot. A process that closed
// its read-only environment would have dropped them (POSIX locks belong to the process), and the
// other would have initialised the lock file again, reader table included.
TEST_F(LmdbReadUntilWrite, ASnapshotReadAfterTheFirstWriteKeepsItsPagesFromOtherWriters) {
  const fs::path go = dir.path() / "go";
  ChildProcess reader([&] {
    ::alarm(60);
    auto store = LmdbStore::open(lmdb_dir(), false);
    if (!store || !(*store)->put(Digest::of("first write"), Entry{"opencl", "BIN"}))
      return 1;
    bool intact = false;
    auto seen = (*store)->visit(shared, [&](const EntryView& view) {
      const std::string before(view.payload);
      ChildProcess::tell_parent("reading");
      while (!fs::exists(go))
        ::usleep(1000);
      intact = before == filled_with("shared") && view.payload == before;
    });
    return seen && *seen && intact ? 0 : 2;
  });
  ASSERT_EQ(reader.next_message(), std::optional<std::string>("reading")) << reader.err();
  ChildProcess writer([&] {
    auto store = LmdbStore::open(lmdb_dir(), false);
    if (!store || !(*store)->remove(shared))
      return 1;
    for (int i = 0; i < 60; ++i) { // each a commit: freed pages are reused from the second on
      const std::string name = "other " + std::to_string(i);
      if (!(*store)->put(Digest::of(name), Entry{"opencl", filled_with(name)}))
        return 2;
    }
    return 0;
  });
  EXPECT_EQ(writer.wait(), 0) << writer.err();
  std::ofstream(go).put('\n');
  EXPECT_EQ(reader.wait(), 0) << reader.err();
}

// A writable open that fails past LMDB's lock setup (here: no descriptor left for the data
// file) has LMDB close the lock file, which drops every lock this process holds on it, the
// read-only environment's too. They are taken again: another process sees this one's shared lock on
// byte 0 (no process initialises the file again under it) and its lock on the byte at its id (its
// reader slots are live). The write fails with the reason; the next one opens the environment and
// works.
TEST_F(LmdbReadUntilWrite, AWritableOpenThatFailsKeepsTheProcesssLocksAndTheNextWriteWorks) {
  const fs::path go = dir.path() / "go";
  ChildProcess reader([&] {
    ::alarm(60);
    auto store = LmdbStore::open(lmdb_dir(), false);
    if (!store || payload_in(**store, shared) != filled_with("shared"))
      return 1;
    rlimit before{};
    ::getrlimit(RLIMIT_NOFILE, &before);
    const int lowest = ::open("/dev/null", O_RDONLY); // the one number left below the limit
    ::close(lowest);
    rlimit tight = before;
    tight.rlim_cur = static_cast<rlim_t>(lowest) + 1;
    if (::setrlimit(RLIMIT_NOFILE, &tight) != 0)
      return 2;
    const auto failed = (*store)->put(Digest::of("own"), Entry{"opencl", "BIN"});
    ::setrlimit(RLIMIT_NOFILE, &before);
    if (failed)
      return 3; // LMDB opened the data file: the test did not test
    ChildProcess::tell_parent(failed.error().message);
    while (!fs::exists(go))
      ::usleep(1000);
    if (!(*store)->put(Digest::of("own"), Entry{"opencl", "BIN"}))
      return 4;
    return payload_in(**store, Digest::of("own")) == "BIN" &&
                   payload_in(**store, shared) == filled_with("shared")
               ? 0
               : 5;
  });
  const auto message = reader.next_message();
  ASSERT_TRUE(message) << reader.err();
  EXPECT_NE(message->find("Too many open files"), std::string::npos) << *message;
  using Held = std::pair<int, pid_t>;
  const fs::path lock = lmdb_dir() / "lock.mdb";
  EXPECT_EQ(lock_holder(lock, F_WRLCK, 0), Held(F_RDLCK, reader.pid())) << "byte 0, shared";
  EXPECT_EQ(lock_holder(lock, F_RDLCK, reader.pid()), Held(F_WRLCK, reader.pid()))
      << "its id's byte";
  std::ofstream(go).put('\n');
  EXPECT_EQ(reader.wait(), 0) << reader.err();
}

// A read that faults poisons the environment while it is still read-only: a write then fails at
// once and opens nothing (the poisoned environment gave up its locks and its gate; another
// process may be moving the file aside).
TEST_F(LmdbReadUntilWrite, AWriteAfterAFaultInAReadOpensNothing) {
  const Digest record = Digest::of("record");
  ChildProcess writer([&] {
    auto store = LmdbStore::open(lmdb_dir(), false);
    return store && (*store)->put_records({{record, "bytes"}}) ? 0 : 1;
  });
  ASSERT_EQ(writer.wait(), 0) << writer.err();
  ChildProcess reader([&] {
    auto store = LmdbStore::open(lmdb_dir(), false);
    if (!store)
      return 1;
    static char* forbidden =
        static_cast<char*>(::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    // A record is used inside the store's read transaction: a fault there is the store's.
    const auto faulted = (*store)->visit_record(record, [](std::string_view) {
      static_cast<void>(*static_cast<volatile char*>(forbidden)); // as a damaged page would
    });
    if (faulted || faulted.error().code != ErrorCode::corrupt)
      return 2;
    const auto written = (*store)->put(Digest::of("own"), Entry{"opencl", "BIN"});
    if (written || written.error().code != ErrorCode::corrupt)
      return 3;
    for (int mode : access_modes_of(lmdb_dir() / "data.mdb"))
      if (mode != O_RDONLY)
        return 4; // a writable environment was opened on the poisoned tier
    return 0;
  });
  EXPECT_EQ(reader.wait(), 0) << reader.err();
}

// The first write of a process opens the environment for writing while another process's
// store holds LMDB's writer lock: the write waits for that store, this process's reads do not.
TEST_F(LmdbReadUntilWrite, ReadsGoOnWhileTheFirstWriteWaitsForAnotherProcesssStore) {
  ChildProcess other([&] {
    ::alarm(60);
    if (!lmdb_write_transaction(lmdb_dir()))
      return 2;
    ChildProcess::tell_parent("writing");
    for (;;)
      ::pause();
  });
  ASSERT_EQ(other.next_message(), std::optional<std::string>("writing")) << other.err();
  ChildProcess process([&] {
    ::alarm(30); // a read that waits for the other store ends the process, and sends nothing
    auto store = LmdbStore::open(lmdb_dir(), false);
    if (!store)
      return 1;
    std::atomic<pid_t> writer_tid{0};
    std::thread writer([&] {
      writer_tid = static_cast<pid_t>(::syscall(SYS_gettid));
      static_cast<void>((*store)->put(Digest::of("own"), Entry{"opencl", "BIN"}));
    });
    while (writer_tid.load() == 0) {
    }
    // Waiting for the other process's store.
    test::wait_until_in_syscall(writer_tid.load(), {SYS_futex});
    ChildProcess::tell_parent(payload_in(**store, shared) == filled_with("shared") ? "read"
                                                                                   : "wrong");
    writer.join(); // once the other process is gone
    return 0;
  });
  EXPECT_EQ(process.next_message(), std::optional<std::string>("read")) << process.err();
  other.kill(SIGKILL);
  other.wait();
  EXPECT_EQ(process.wait(), 0) << process.err();
}

// Eight processes at once, then thirty one after another, each reads the tier and writes an entry
// of its own: every entry is there afterwards, and nothing was found damaged.
TEST_F(LmdbReadUntilWrite, ManyProcessesReadThenWriteAndEveryEntryLands) {
  const auto read_then_write = [&](const std::string& name) {
    auto store = LmdbStore::open(lmdb_dir(), false);
    if (!store || payload_in(**store, shared) != filled_with("shared"))
      return 1;
    return (*store)->put(Digest::of(name), Entry{"opencl", filled_with(name, 3000)}) ? 0 : 2;
  };
  std::vector<std::string> names;
  {
    std::vector<std::unique_ptr<ChildProcess>> at_once;
    for (int i = 0; i < 8; ++i) {
      names.push_back("at once " + std::to_string(i));
      at_once.push_back(std::make_unique<ChildProcess>(
          [&, name = names.back()] { return read_then_write(name); }));
    }
    for (auto& child : at_once)
      EXPECT_EQ(child->wait(), 0) << child->err();
  }
  for (int i = 0; i < 30; ++i) {
    names.push_back("in a row " + std::to_string(i));
    ChildProcess child([&] { return read_then_write(names.back()); });
    EXPECT_EQ(child.wait(), 0) << child.err();
  }
  auto after = LmdbStore::open(lmdb_dir(), true);
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(payload_in(**after, shared), filled_with("shared"));
  for (const std::string& name : names)
    EXPECT_EQ(payload_in(**after, Digest::of(name)), filled_with(name, 3000)) << name;
  for (const auto& file : fs::directory_iterator(lmdb_dir()))
    EXPECT_EQ(file.path().filename().string().find("corrupt"), std::string::npos) << file.path();
  EXPECT_FALSE(fs::exists(lmdb_dir() / "damaged"));
}

} // namespace
} // namespace jitcache
