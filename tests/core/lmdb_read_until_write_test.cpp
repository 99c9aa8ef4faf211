// A writable user tier that exists is opened read-only until the process's first write
// (LmdbStore::Env::reading_until_write): a process that only hits never opens the data file for
// writing; the first write, from any thread, opens it writable while other threads read; the
// read-only environment stays open beside it, so this process keeps its LMDB locks, and another
// process's writes never reuse the pages of a snapshot it reads.
#include "core/tiers/user/lmdb_store.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
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
