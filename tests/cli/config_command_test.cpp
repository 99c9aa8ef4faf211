// `jitcache config`: the configuration file as a user sets it (ccache -M's habit): list, get,
// set, unset; the values other processes then use with no variable set; refused values and
// keys; concurrent and failing writes; and 0 as "no limit" wherever a size limit is taken.
#include "tests/support/child_process.hpp"
#include "tests/support/files.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace jitcache {
namespace {
using test::first_line;
using test::read_file;

using test::json_lines;
using test::run_cli;
namespace fs = std::filesystem;

class ConfigCommandTest : public ::testing::Test {
protected:
  // No JITCACHE_ setting in the environment: only the file's, at its XDG place.
  std::map<std::string, std::string> env(std::map<std::string, std::string> extra = {}) const {
    extra.emplace("XDG_CONFIG_HOME", (dir.path() / "config").string());
    extra.emplace("XDG_CACHE_HOME", (dir.path() / "cache").string());
    return extra;
  }
  fs::path file() const { return dir.path() / "config" / "jitcache" / "jitcache.conf"; }
  // The folder's names other than the file and its lock: temporary files left behind.
  std::set<std::string> left_over() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(file().parent_path()))
      if (entry.path().filename() != "jitcache.conf" &&
          entry.path().filename() != "jitcache.conf.lock")
        names.insert(entry.path().filename().string());
    return names;
  }
  test::TempDir dir;
};

TEST_F(ConfigCommandTest, SetGetListAndUnsetWithWhereEachValueComesFrom) {
  auto r = run_cli({"config", "max_size", "5G"}, env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "max_size = 5G in " + file().string() + "\n");
  EXPECT_EQ(read_file(file()), "max_size = 5G\n");
  struct stat st {};
  ASSERT_EQ(::stat(file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(run_cli({"config", "JITCACHE_LOG", "debug"}, env()).exit_code, 0);

  r = run_cli({"config", "max_size"}, env());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "5G\n");
  EXPECT_EQ(r.err, "") << "debug logging says nothing for this command";

  r = run_cli({"config", "--json"}, env({{"JITCACHE_READONLY", "1"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, nlohmann::json> by_key;
  for (const auto& line : json_lines(r.out))
    by_key[line["key"].get<std::string>()] = line;
  EXPECT_EQ(by_key.size(), 16u) << r.out;
  EXPECT_EQ(by_key["max_size"]["source"], "file");
  EXPECT_EQ(by_key["max_size"]["value"], "5G");
  EXPECT_EQ(by_key["max_size"]["line"], 1);
  EXPECT_EQ(by_key["max_size"]["file"], file().string());
  EXPECT_EQ(by_key["log"]["source"], "file");
  EXPECT_EQ(by_key["readonly"]["source"], "environment");
  EXPECT_EQ(by_key["readonly"]["value"], "1");
  EXPECT_EQ(by_key["dir"]["source"], "default");
  EXPECT_EQ(by_key["dir"]["value"], nullptr);
  EXPECT_EQ(by_key["remote_key"]["in_file"], false);

  // The environment wins, and the listing says what of the file is not used.
  r = run_cli({"config"}, env({{"JITCACHE_MAX_SIZE", "1G"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("configuration file: " + file().string() + "\n"), std::string::npos);
  EXPECT_NE(r.out.find("max_size = 1G  (environment; the file's 5G is not used)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("log = debug  (file " + file().string() + ":2)\n"), std::string::npos)
      << r.out;

  r = run_cli({"config", "--unset", "max_size"}, env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(file()), "log = debug\n");
  EXPECT_EQ(run_cli({"config", "max_size"}, env()).out, "\n");
  EXPECT_TRUE(left_over().empty());
}

// The habit this is for: `jitcache config max_size 256K` once, and later processes keep the
// user tier within it, with no variable set: a build of three kernels (about 370 KB) evicts.
TEST_F(ConfigCommandTest, ASizeLimitSetOnceIsKeptByLaterProcesses) {
  const std::string kernels = JITCACHE_KERNELS;
  std::vector<std::string> build{"build", "--backend", "opencl", "--options", "-I " + kernels};
  for (const char* name : {"matmul", "reduce", "vector_ops"})
    build.push_back(kernels + "/" + name + ".cl");
  ASSERT_EQ(run_cli({"config", "max_size", "256K"}, env()).exit_code, 0);
  auto r = run_cli(build, env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto total = json_lines(run_cli({"stats", "--json"}, env()).out).back();
  EXPECT_EQ(total["max_size"], 256 << 10);
  EXPECT_GT(total["evicted"].get<int>(), 0);
  EXPECT_LE(total["bytes"].get<std::uint64_t>(), 256u << 10);
  const int evicted = total["evicted"].get<int>();

  // 0: no limit, in the file as in the environment: the same build evicts nothing more.
  ASSERT_EQ(run_cli({"config", "max_size", "0"}, env()).exit_code, 0);
  r = run_cli(build, env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  total = json_lines(run_cli({"stats", "--json"}, env()).out).back();
  EXPECT_EQ(total["max_size"], nullptr);
  EXPECT_EQ(total["max_file_bytes"], nullptr);
  EXPECT_EQ(total["evicted"], evicted);
  EXPECT_EQ(total["entries"], 3);

  // Over the file's limit, `prune --max-size 0` and JITCACHE_MAX_SIZE=0 lift it.
  ASSERT_EQ(run_cli({"config", "max_size", "256K"}, env()).exit_code, 0);
  for (const auto& [args, extra] :
       {std::pair<std::vector<std::string>, std::map<std::string, std::string>>{
            {"prune", "--max-size", "0", "--json"}, {}},
        {{"prune", "--json"}, {{"JITCACHE_MAX_SIZE", "0"}}}}) {
    r = run_cli(args, env(extra));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto pruned = json_lines(r.out).back();
    EXPECT_EQ(pruned["max_size"], nullptr);
    EXPECT_EQ(pruned["evicted"], 0);
    EXPECT_EQ(pruned["entries"], 3);
  }

  // A limit lowered under a fuller tier: prune gets down to it, and a build stores again.
  ASSERT_EQ(run_cli({"config", "max_size", "200K"}, env()).exit_code, 0);
  r = run_cli({"prune", "--json"}, env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto pruned = json_lines(r.out).back();
  EXPECT_EQ(pruned["max_size"], 200 << 10);
  EXPECT_GT(pruned["evicted"].get<int>(), 0);
  EXPECT_LE(pruned["bytes"].get<std::uint64_t>(), 200u << 10);
  r = run_cli({"build", "--backend", "opencl", "--options", "-I " + kernels + " -D LOWERED=1",
               "--json", kernels + "/nbody.cl"},
              env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "stored, no warning";
  EXPECT_NE(json_lines(r.out).back()["bytes"], nullptr);
}

// `--max-source-size 0` is "no limit", as every size limit's 0.
TEST_F(ConfigCommandTest, ASourceSizeLimitOfZeroIsNoLimit) {
  const std::string kernels = JITCACHE_KERNELS;
  auto r = run_cli({"build", "--backend", "opencl", "--options", "-I " + kernels,
                    "--max-source-size", "0", kernels + "/reduce.cl"},
                   env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(ConfigCommandTest, ABadValueOrKeyIsAUsageErrorAndNothingIsWritten) {
  ASSERT_EQ(run_cli({"config", "log", "info"}, env()).exit_code, 0);
  const std::string before = read_file(file());
  const std::pair<std::vector<std::string>, std::string> bad[] = {
      {{"config", "max_size", "5Q"},
       "jitcache: error: config: max_size 5Q: not a size such as 10G or 512M (0: no limit); "
       "the file is left as it is"},
      {{"config", "log", "loud"},
       "jitcache: error: config: log loud: expected error, warn, info or debug; the file is left "
       "as it is"},
      {{"config", "max_sise", "5G"}, "jitcache: error: config: unknown key 'max_sise'"},
      {{"config", "readonly", ""}, "jitcache: error: config: readonly : an empty value"},
      {{"config", "--unset", "max_size", "5G"},
       "jitcache: error: config: --unset takes a KEY only"},
  };
  for (const auto& [args, message] : bad) {
    auto r = run_cli(args, env());
    EXPECT_EQ(r.exit_code, 2) << args[1];
    EXPECT_EQ(first_line(r.err).rfind(message, 0), 0u) << r.err;
    EXPECT_NE(r.err.find("Usage: jitcache config"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(read_file(file()), before);
  }
}

// The remote key is a secret: never written to the file, never echoed; a key file is.
TEST_F(ConfigCommandTest, TheRemoteKeyIsRefusedAndNeverReachesTheFile) {
  const std::string secret = "8b1a9953c4611296a827abf8c47804d7";
  auto r = run_cli({"config", "remote_key", secret}, env());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(first_line(r.err).rfind("jitcache: error: config: remote_key is not kept in the "
                                    "configuration file: it is a secret",
                                    0),
            0u)
      << r.err;
  EXPECT_EQ(r.err.find(secret), std::string::npos);
  EXPECT_EQ(r.out.find(secret), std::string::npos);
  EXPECT_FALSE(fs::exists(file()));
  r = run_cli({"config", "JITCACHE_REMOTE_KEY", secret}, env());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(file()));
  // Nor does the listing print the environment's.
  r = run_cli({"config", "--json"}, env({{"JITCACHE_REMOTE_KEY", secret}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find(secret), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(secret, 32 bytes)"), std::string::npos) << r.out;

  // A key file, named relatively, is kept as an absolute path (mode 0600 checked as the
  // environment's would be).
  const fs::path key = dir.path() / "key";
  std::ofstream(key) << secret << "\n";
  ::chmod(key.c_str(), 0600);
  r = run_cli({"config", "remote_key_file", "../key"}, env());
  EXPECT_EQ(r.exit_code, 2) << "the test's working directory holds no key";
  test::ProcessResult set = run_cli({"config", "remote_key_file", key.string()}, env());
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(read_file(file()), "remote_key_file = " + key.string() + "\n");
  ::chmod(key.c_str(), 0644);
  r = run_cli({"config", "remote_key_file", key.string()}, env());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(first_line(r.err).find("the key file must belong to this user and have mode 0600"),
            std::string::npos)
      << r.err;
}

// Eight processes set eight keys at once: every one lands (a lock, not last-rename-wins); then
// thirty in a row: each one's value is there once.
TEST_F(ConfigCommandTest, ConcurrentAndSuccessiveSettersLoseNoUpdate) {
  const std::vector<std::pair<std::string, std::string>> settings = {
      {"max_size", "7G"},    {"log", "info"},          {"readonly", "0"},
      {"max_compiles", "3"}, {"disable", "hip"},       {"opencl_store", "wait"},
      {"opencl_layer", "1"}, {"dir", "/tmp/elsewhere"}};
  for (int round = 0; round < 3; ++round) {
    fs::remove(file());
    std::vector<test::ProcessResult> results(settings.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < settings.size(); ++i)
      threads.emplace_back([&, i] {
        results[i] = run_cli({"config", settings[i].first, settings[i].second}, env());
      });
    for (std::thread& thread : threads)
      thread.join();
    for (const auto& r : results)
      ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string text = read_file(file());
    for (const auto& [key, value] : settings)
      EXPECT_NE(text.find(key + " = " + value + "\n"), std::string::npos)
          << "round " << round << ": " << key << " lost:\n"
          << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 8) << text;
  }
  for (int i = 0; i < 30; ++i) {
    const auto& [key, value] = settings[i % settings.size()];
    const std::string v = key == "max_compiles" ? std::to_string(1 + i) : value;
    ASSERT_EQ(run_cli({"config", key, v}, env()).exit_code, 0);
  }
  const std::string text = read_file(file());
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 8) << text;
  EXPECT_NE(text.find("max_compiles = 28\n"), std::string::npos) << text;
  EXPECT_TRUE(left_over().empty());
}

// A folder this user cannot write: one line naming the file, exit 1, the old file as it was.
// As root (who writes anywhere) the command runs as another user over root's folder.
TEST_F(ConfigCommandTest, AReadOnlyFolderIsOneLineAndTheOldFileIsKept) {
  ASSERT_EQ(run_cli({"config", "max_size", "1M"}, env()).exit_code, 0);
  const fs::path folder = file().parent_path();
  test::ProcessResult r;
  if (::geteuid() == 0) {
    fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::others_exec);
    fs::permissions(folder.parent_path(), fs::perms::owner_all | fs::perms::others_exec);
    fs::permissions(folder, fs::perms::owner_all | fs::perms::others_exec);
    ::chmod(file().c_str(), 0644); // others may read it, only root write it
    r = test::run_cli_as({65534, 65534}, {"config", "max_size", "2M"},
                         env({{"HOME", "/nonexistent"}}));
  } else {
    fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec);
    r = run_cli({"config", "max_size", "2M"}, env());
    fs::permissions(folder, fs::perms::owner_all);
  }
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("jitcache: error: cannot write " + file().string() + ": ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(file()), "max_size = 1M\n");
  EXPECT_TRUE(left_over().empty());
}

// A full disk: one line naming the file, exit 1, the old file as it was, no temporary file. On a
// small tmpfs of a private mount namespace (root only), filled up.
TEST_F(ConfigCommandTest, AFullDiskIsOneLineAndTheOldFileIsKept) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "mounting a tmpfs needs root";
  constexpr int k_skip = 77;
  const fs::path folder = file().parent_path();
  test::ChildProcess child([&] {
    fs::create_directories(folder);
    if (!test::private_mounts() || ::mount("tmpfs", folder.c_str(), "tmpfs", 0, "size=64k") != 0)
      return k_skip;
    if (run_cli({"config", "max_size", "1M"}, env()).exit_code != 0)
      return 1;
    {
      std::ofstream filler(folder / "filler", std::ios::binary);
      const std::string chunk(4096, 'x');
      while (filler.write(chunk.data(), chunk.size()) && filler.flush())
        ;
    }
    const auto r = run_cli({"config", "log", "debug"}, env());
    std::fputs(r.err.c_str(), stderr);
    if (r.exit_code != 1 || std::count(r.err.begin(), r.err.end(), '\n') != 1 ||
        r.err.rfind("jitcache: error: cannot write " + file().string() + ": ", 0) != 0 ||
        r.err.find("No space left on device") == std::string::npos)
      return 2;
    if (read_file(file()) != "max_size = 1M\n")
      return 3;
    fs::remove(folder / "filler");
    return left_over().empty() ? 0 : 4;
  });
  const int status = child.wait();
  if (status == k_skip)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN)";
  EXPECT_EQ(status, 0) << child.err();
}

// `jitcache info` says which settings the file gave.
TEST_F(ConfigCommandTest, InfoNamesTheFileAndWhatItGave) {
  ASSERT_EQ(run_cli({"config", "max_size", "3G"}, env()).exit_code, 0);
  auto r = run_cli({"info", "--json"}, env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto info = json_lines(r.out).front();
  EXPECT_EQ(info["config_file"], file().string());
  EXPECT_EQ(info["from_config_file"], nlohmann::json::array({"JITCACHE_MAX_SIZE"}));
  EXPECT_EQ(info["max_size"], 3ull << 30);
  r = run_cli({"info"}, env());
  EXPECT_NE(r.out.find("  JITCACHE_MAX_SIZE=3G (from the configuration file)\n"), std::string::npos)
      << r.out;
}

// A FIFO where the file should be: every command still runs (with one warning), and a write
// is refused, the FIFO left; none waits for a writer that never comes.
TEST_F(ConfigCommandTest, AFifoAsTheFileBlocksNothing) {
  fs::create_directories(file().parent_path());
  ASSERT_EQ(::mkfifo(file().c_str(), 0600), 0);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"config"}, {"stats"}, {"info"}}) {
    auto r = run_cli(args, env());
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_EQ(r.err, "jitcache: warning: cannot read " + file().string() +
                         ": a FIFO, not a regular file; no setting of it is used\n")
        << args[0];
  }
  auto r = run_cli({"config", "max_size", "1M"}, env());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("a FIFO, not a regular file; it is left as it is"), std::string::npos)
      << r.err;
}

// A damaged file: one warning per damaged line naming the file and line, from any command;
// the good lines still apply.
TEST_F(ConfigCommandTest, ADamagedFileWarnsNamingTheLineAndItsGoodLinesApply) {
  fs::create_directories(file().parent_path());
  std::ofstream(file(), std::ios::binary) << "max_size = 1M\nlog = de\x01"
                                             "bug\nreadonly = 1\n";
  auto r = run_cli({"config", "--json"}, env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "jitcache: warning: " + file().string() +
                       ":2: a damaged line (a control character (byte 1)); it is ignored\n");
  int from_file = 0;
  for (const auto& line : json_lines(r.out))
    from_file += line["source"] == "file";
  EXPECT_EQ(from_file, 2);
  // Setting the damaged key replaces its line; the damage is gone with it.
  ASSERT_EQ(run_cli({"config", "log", "debug"}, env()).exit_code, 0);
  EXPECT_EQ(read_file(file()), "max_size = 1M\nlog = debug\nreadonly = 1\n");
}

// JITCACHE_CONFIG_FILE names another file; set empty, none is used and none can be written.
TEST_F(ConfigCommandTest, TheFileCanBeNamedOrTurnedOff) {
  const fs::path other = dir.path() / "other.conf";
  ASSERT_EQ(
      run_cli({"config", "log", "info"}, env({{"JITCACHE_CONFIG_FILE", other.string()}})).exit_code,
      0);
  EXPECT_EQ(read_file(other), "log = info\n");
  EXPECT_FALSE(fs::exists(file()));
  auto r = run_cli({"config", "log", "info"}, env({{"JITCACHE_CONFIG_FILE", ""}}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "jitcache: error: no configuration file: JITCACHE_CONFIG_FILE is set empty\n");
  r = run_cli({"config"}, env({{"JITCACHE_CONFIG_FILE", ""}}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(first_line(r.out), "configuration file: none (JITCACHE_CONFIG_FILE is set empty)");
}

} // namespace
} // namespace jitcache
