// Randomized hostile input (issue 27) for the files another party can change while jitcache
// runs: the request files of a cache's pending folder (read by the detached `jitcache store`)
// and the records `jitcache warm` reads. Each kind of damage is tried k_trials times (seeded,
// the seed printed): no process may crash or hang, nothing may be written outside the cache,
// and no file written may hold the remote tier's password or signing key.
#include <jitcache/opencl.hpp>

#include "core/record/request_record.hpp"
#include "core/support/regular_file.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/hostile_trials.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace jitcache {
namespace {

namespace fs = std::filesystem;

// Trials per kind: JITCACHE_HOSTILE_TRIALS, else 200.
int trials() {
  return test::hostile_trials(200);
}

const char* const k_password = "S3cretPassw0rd";
const char* const k_signing_key = "TOP-SECRET";

enum class Damage {
  flip,      ///< 1 to 8 bytes anywhere set to random values
  truncate,  ///< cut at a random length
  insert,    ///< 1 to 64 random bytes inserted anywhere
  non_utf8,  ///< bytes 0x80..0xff written over a random stretch
  huge_line, ///< a line of 128 KiB to 1 MiB (past any pipe or read buffer) at a line start
  fifo,      ///< a FIFO in its place
  symlink,   ///< a symbolic link to a valid file outside the cache
  directory, ///< a directory in its place
  dev_zero,  ///< a symbolic link to /dev/zero
};
const Damage k_kinds[] = {Damage::flip,     Damage::truncate,  Damage::insert,
                          Damage::non_utf8, Damage::huge_line, Damage::fifo,
                          Damage::symlink,  Damage::directory, Damage::dev_zero};
const char* name_of(Damage kind) {
  const char* names[] = {"flip", "truncate", "insert",    "non_utf8", "huge_line",
                         "fifo", "symlink",  "directory", "dev_zero"};
  return names[static_cast<int>(kind)];
}

// `bytes` damaged as `kind` says (the byte kinds), seeded by `rng`.
std::string damaged(std::string bytes, Damage kind, std::mt19937& rng) {
  const auto at = [&](std::size_t size) {
    return std::uniform_int_distribution<std::size_t>(0, size)(rng);
  };
  const auto byte = [&](int from, int to) {
    return static_cast<char>(std::uniform_int_distribution<int>(from, to)(rng));
  };
  switch (kind) {
  case Damage::flip:
    for (int n = std::uniform_int_distribution<int>(1, 8)(rng); n > 0 && !bytes.empty(); --n)
      bytes[at(bytes.size() - 1)] = byte(0, 255);
    break;
  case Damage::truncate:
    bytes.resize(at(bytes.size()));
    break;
  case Damage::insert: {
    std::string extra(std::uniform_int_distribution<std::size_t>(1, 64)(rng), '\0');
    for (char& c : extra)
      c = byte(0, 255);
    bytes.insert(at(bytes.size()), extra);
    break;
  }
  case Damage::non_utf8: {
    const std::size_t from = at(bytes.size());
    const std::size_t length = std::min<std::size_t>(bytes.size() - from, at(32));
    for (std::size_t i = 0; i < length; ++i)
      bytes[from + i] = byte(0x80, 0xff);
    break;
  }
  case Damage::huge_line: {
    std::size_t where = at(bytes.size());
    while (where > 0 && bytes[where - 1] != '\n')
      --where;
    const std::size_t length = std::uniform_int_distribution<std::size_t>(128 << 10, 1 << 20)(rng);
    bytes.insert(where, (rng() % 2 ? std::string("{\"format\":1,\"source\":\"") : std::string()) +
                            std::string(length, 'a') + "\n");
    break;
  }
  default:
    break;
  }
  return bytes;
}

// Puts at `path` what `kind` says: `bytes` damaged, or a special file.
void plant(const fs::path& path, const std::string& bytes, Damage kind, std::mt19937& rng,
           const fs::path& outside) {
  switch (kind) {
  case Damage::fifo:
    ASSERT_EQ(mkfifo(path.c_str(), 0600), 0) << path;
    break;
  case Damage::symlink:
    ASSERT_EQ(::symlink(outside.c_str(), path.c_str()), 0) << path;
    break;
  case Damage::directory:
    fs::create_directories(path / "inside");
    break;
  case Damage::dev_zero:
    ASSERT_EQ(::symlink("/dev/zero", path.c_str()), 0) << path;
    break;
  default:
    std::ofstream(path, std::ios::binary) << damaged(bytes, kind, rng);
  }
}

// Every path under `root` (not following symlinks), each with its size (-1: not a file).
std::map<std::string, std::int64_t> tree(const fs::path& root) {
  std::map<std::string, std::int64_t> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::end(it); it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) == 0)
      out[it->path().string()] = S_ISREG(st.st_mode) ? st.st_size : -1;
  }
  return out;
}

// Paths under `root` that are new or changed since `before`, outside `allowed`.
std::vector<std::string> written_outside(const std::map<std::string, std::int64_t>& before,
                                         const fs::path& root, const fs::path& allowed) {
  std::vector<std::string> out;
  for (const auto& [path, size] : tree(root)) {
    if (path.rfind(allowed.string() + "/", 0) == 0 || path == allowed.string())
      continue;
    auto it = before.find(path);
    if (it == before.end() || it->second != size)
      out.push_back(path);
  }
  return out;
}

// Every regular file under `root` holding a secret.
std::vector<std::string> secrets_in(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& [path, size] : tree(root)) {
    if (size < 0)
      continue;
    auto bytes = detail::read_regular_file(path, 1ull << 30);
    if (bytes && (bytes->find(k_password) != std::string::npos ||
                  bytes->find(k_signing_key) != std::string::npos))
      out.push_back(path);
  }
  return out;
}

class HostileFilesTest : public ::testing::Test {
protected:
  void SetUp() override {
    cl_platform_id platform = nullptr;
    ASSERT_EQ(clGetPlatformIDs(1, &platform, nullptr), CL_SUCCESS) << "PoCL must be installed";
    ASSERT_EQ(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), CL_SUCCESS);
    env = {{"JITCACHE_DIR", cache().string()},
           {"JITCACHE_OPENCL_STORE", "wait"},
           {"JITCACHE_REMOTE", std::string("redis://u:") + k_password + "@127.0.0.1:1"},
           {"JITCACHE_REMOTE_KEY", k_signing_key}};
    fs::create_directories(dir.path() / "outside");
  }
  fs::path cache() const { return dir.path() / "cache"; }
  fs::path outside() const { return dir.path() / "outside"; }

  // Two small requests as a hand-over writes them, with a variable (as an older jitcache wrote
  // them) naming a cache outside.
  std::string request_lines() {
    const Config config = Config::from_variables(env);
    std::string out;
    for (const char* body : {"x[0] = 1;", "x[0] = 2;"}) {
      detail::RequestRecord record;
      record.backend = "opencl";
      record.source = std::string("kernel void k(global int* x) { ") + body + " }\n";
      record.options = {""};
      record.directory = outside().string();
      auto key = opencl::make_key(config, device, record.source, "");
      EXPECT_TRUE(key) << key.error().message;
      record.key = key->digest.hex();
      record.variables["JITCACHE_DIR"] = (outside() / "cache").string();
      out += detail::encode_request(record) + "\n";
    }
    return out;
  }

  // After the trials: nothing written outside the cache (but for what the test planted in
  // `planted`), no secret in any file.
  void check_after(const std::map<std::string, std::int64_t>& before,
                   const fs::path& planted = {}) {
    std::vector<std::string> outside_cache;
    for (const std::string& path : written_outside(before, dir.path(), cache()))
      if (planted.empty() || path.rfind(planted.string() + "/", 0) != 0)
        outside_cache.push_back(path);
    EXPECT_EQ(outside_cache, std::vector<std::string>{});
    EXPECT_EQ(secrets_in(dir.path()), std::vector<std::string>{});
  }

  test::TempDir dir;
  cl_device_id device = nullptr;
  std::map<std::string, std::string> env;
};

TEST_F(HostileFilesTest, DamagedRequestFilesInThePendingFolder) {
  const fs::path pending = cache() / "v1" / "pending";
  fs::create_directories(pending);
  const std::string base = request_lines();
  const fs::path victim = outside() / "valid.jsonl";
  std::ofstream(victim) << base;
  const auto before = tree(dir.path());
  int runs = 0, crashes = 0, hangs = 0;
  for (Damage kind : k_kinds) {
    const std::uint32_t seed = 2700 + static_cast<std::uint32_t>(kind);
    std::mt19937 rng(seed);
    for (int trial = 0; trial < trials(); ++trial)
      plant(pending / (std::string(name_of(kind)) + "-" + std::to_string(trial) + ".jsonl"), base,
            kind, rng, victim);
    // What a store run leaves to the next: the request files, and anything else of that name
    // but a directory that is not empty (never read, never removed: jitcache makes none).
    const auto left = [&] {
      std::size_t count = 0;
      for (const auto& item : fs::directory_iterator(pending))
        count += item.path().extension() == ".jsonl" &&
                 !(item.is_directory() && !item.is_symlink() && !fs::is_empty(item.path()));
      return count;
    };
    // Until the folder holds no request file: a run takes a bounded batch.
    for (int round = 0; round < trials() / 32 + 4; ++round) {
      if (left() == 0)
        break;
      const int status = test::run_cli_bounded({"store", "--pending", pending.string()}, env, 120);
      ++runs;
      crashes += status > 128 && status != 128 + SIGALRM;
      hangs += status == 128 + SIGALRM;
      EXPECT_TRUE(status == 0 || status == 1)
          << name_of(kind) << ", seed " << seed << ": status " << status;
    }
    EXPECT_EQ(left(), 0u) << name_of(kind) << ", seed " << seed;
    std::cout << "pending " << name_of(kind) << ": " << trials() << " trials, seed " << seed
              << ", 0 left\n";
  }
  std::cout << "pending folder: " << runs << " store runs, " << crashes << " crashes, " << hangs
            << " hangs\n";
  EXPECT_EQ(crashes, 0);
  EXPECT_EQ(hangs, 0);
  EXPECT_FALSE(fs::exists(outside() / "cache"));
  check_after(before);
}

TEST_F(HostileFilesTest, DamagedRecordsReadByWarm) {
  const fs::path record = dir.path() / "record.jsonl";
  {
    auto vars = env;
    vars["JITCACHE_RECORD"] = record.string();
    Cache cache(Config::from_variables(vars));
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, nullptr);
    ASSERT_NE(context, nullptr);
    for (const char* body : {"x[0] = 1;", "x[0] = 2;"}) {
      auto built =
          opencl::build_program(cache, context, device,
                                std::string("kernel void k(global int* x) { ") + body + " }\n", "");
      ASSERT_TRUE(built) << built.error().message;
      clReleaseProgram(built->program);
    }
    clReleaseContext(context);
  }
  const std::string base = detail::read_regular_file(record.string(), 1 << 20).value();
  const fs::path records = dir.path() / "records";
  fs::create_directories(records);
  const fs::path victim = outside() / "valid.jsonl";
  std::ofstream(victim) << base;
  const auto before = tree(dir.path());
  int runs = 0, crashes = 0, hangs = 0;
  for (Damage kind : k_kinds) {
    const std::uint32_t seed = 2800 + static_cast<std::uint32_t>(kind);
    std::mt19937 rng(seed);
    const bool special = kind >= Damage::fifo;
    // The byte kinds: the damaged records of several trials one after another in one file
    // (warm reads each line on its own), 25 a file for huge lines; the special files: one warm
    // each.
    const int per_file = kind == Damage::huge_line ? 25 : trials();
    std::string many;
    for (int trial = 0; trial < trials(); ++trial) {
      const fs::path file = records / (std::string(name_of(kind)) + std::to_string(trial));
      if (!special) {
        many += damaged(base, kind, rng) + "\n";
        if ((trial + 1) % per_file != 0 && trial + 1 != trials())
          continue;
        std::ofstream(file, std::ios::binary) << many;
        many.clear();
        const int status = test::run_cli_bounded({"warm", file.string(), "--jobs", "1"}, env, 300);
        ++runs;
        crashes += status > 128 && status != 128 + SIGALRM;
        hangs += status == 128 + SIGALRM;
        EXPECT_TRUE(status == 0 || status == 1)
            << name_of(kind) << ", seed " << seed << ", trial " << trial << ": status " << status;
        continue;
      }
      plant(file, base, kind, rng, victim);
      const int status = test::run_cli_bounded({"warm", file.string(), "--jobs", "1"}, env, 120);
      ++runs;
      crashes += status > 128 && status != 128 + SIGALRM;
      hangs += status == 128 + SIGALRM;
      ASSERT_TRUE(status == 0 || status == 1)
          << name_of(kind) << ", seed " << seed << ", trial " << trial << ": status " << status;
    }
    std::cout << "record " << name_of(kind) << ": " << trials() << " trials, seed " << seed << "\n";
  }
  std::cout << "records: " << runs << " warm runs, " << crashes << " crashes, " << hangs
            << " hangs\n";
  EXPECT_EQ(crashes, 0);
  EXPECT_EQ(hangs, 0);
  check_after(before, records);
}

} // namespace
} // namespace jitcache
