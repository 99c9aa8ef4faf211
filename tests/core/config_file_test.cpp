// The configuration file (core/config/config_file): where it is, how it is read (through the
// environment table's rows; the environment wins), what a damaged, hostile or unreadable file
// does, and how a setting is written.
#include "core/config/config_file.hpp"

#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace jitcache {

using detail::config_file_location;
using detail::config_from;
using detail::ConfigFileContents;
using detail::env_table;
using detail::EnvRole;
using detail::EnvVariable;
using detail::file_key;
using detail::find_setting;
using detail::read_config_file;
namespace fs = std::filesystem;
namespace {

class ConfigFileTest : public ::testing::Test {
protected:
  fs::path write(const std::string& text, const std::string& name = "jitcache.conf") {
    const fs::path path = dir.path() / name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
  }
  // The Config of `environment` and the file holding `text`.
  Config config(const std::string& text, std::map<std::string, std::string> environment = {}) {
    environment.emplace("JITCACHE_DIR", "/c");
    return config_from(environment, read_config_file(write(text)));
  }
  test::TempDir dir;
};

bool has_warning(const Config& c, const std::string& part) {
  for (const std::string& warning : c.warnings)
    if (warning.find(part) != std::string::npos)
      return true;
  return false;
}

TEST(ConfigFileLocationTest, NamedFileElseXdgConfigElseHome) {
  EXPECT_EQ(config_file_location({{"HOME", "/h"}}).path, "/h/.config/jitcache/jitcache.conf");
  EXPECT_EQ(config_file_location({{"HOME", "/h"}, {"XDG_CONFIG_HOME", "/x"}}).path,
            "/x/jitcache/jitcache.conf");
  // A folder given with a closing slash: the same file, written with one slash.
  EXPECT_EQ(config_file_location({{"HOME", "/h/"}}).path.native(),
            "/h/.config/jitcache/jitcache.conf");
  EXPECT_EQ(config_file_location({{"XDG_CONFIG_HOME", "/"}}).path.native(),
            "/jitcache/jitcache.conf");
  // A relative XDG_CONFIG_HOME is not one (the XDG specification).
  EXPECT_EQ(config_file_location({{"HOME", "/h"}, {"XDG_CONFIG_HOME", "x"}}).path,
            "/h/.config/jitcache/jitcache.conf");
  EXPECT_EQ(config_file_location({{"HOME", "/h"}, {"JITCACHE_CONFIG_FILE", "/etc/j.conf"}}).path,
            "/etc/j.conf");
  const auto none = config_file_location({{"HOME", "/h"}, {"JITCACHE_CONFIG_FILE", ""}});
  EXPECT_TRUE(none.path.empty());
  EXPECT_NE(none.why_none.find("JITCACHE_CONFIG_FILE"), std::string::npos) << none.why_none;
  EXPECT_TRUE(config_file_location({}).path.empty());
}

// Every setting has one key in the file, its variable's name in lower case without the prefix;
// the keys the file may not hold are settings.
TEST(ConfigFileLocationTest, EverySettingHasOneKey) {
  std::set<std::string> keys;
  for (const EnvVariable& v : env_table()) {
    if (v.role != EnvRole::setting) {
      EXPECT_EQ(find_setting(v.name), nullptr) << v.name;
      continue;
    }
    EXPECT_TRUE(keys.insert(file_key(v.name)).second) << v.name;
    EXPECT_EQ(find_setting(file_key(v.name)), &v) << v.name;
    EXPECT_EQ(find_setting(v.name), &v) << v.name;
  }
  EXPECT_EQ(file_key("JITCACHE_MAX_SIZE"), "max_size");
  EXPECT_EQ(file_key("JITCACHE_DIR"), "dir");
  EXPECT_NE(detail::file_refusal(*find_setting("remote_key")), nullptr);
  EXPECT_EQ(detail::file_refusal(*find_setting("remote_key_file")), nullptr);
  EXPECT_EQ(detail::file_refusal(*find_setting("max_size")), nullptr);
}

TEST_F(ConfigFileTest, TheEnvironmentWinsOverTheFileAndTheFileOverTheDefault) {
  const std::string text = "# mine\n\nmax_size = 1M\n  log=debug  \nreadonly = 1\n";
  Config c = config(text);
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.at(0);
  EXPECT_EQ(c.max_size, 1u << 20);
  EXPECT_EQ(c.log_level, LogLevel::debug);
  EXPECT_TRUE(c.read_only);
  EXPECT_EQ(c.variables.at("JITCACHE_MAX_SIZE"), "1M") << "a child process is given it";

  c = config(text, {{"JITCACHE_MAX_SIZE", "2G"}, {"JITCACHE_LOG", "error"}});
  EXPECT_EQ(c.max_size, 2ull << 30);
  EXPECT_EQ(c.log_level, LogLevel::error);
  EXPECT_TRUE(c.read_only) << "what the environment does not set still comes from the file";

  // Set but empty in the environment: the default, whatever the file says.
  c = config(text, {{"JITCACHE_MAX_SIZE", ""}});
  EXPECT_FALSE(c.max_size);

  // No file (absent, or none used): the defaults, no warning.
  c = config_from({{"JITCACHE_DIR", "/c"}}, read_config_file(dir.path() / "absent.conf"));
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_FALSE(c.max_size);
  EXPECT_EQ(c.log_level, LogLevel::warn);
  EXPECT_TRUE(read_config_file({}).settings.empty());
}

// 0 is "no limit" in the file as in the environment and `prune --max-size 0`.
TEST_F(ConfigFileTest, MaxSizeZeroIsNoLimit) {
  const Config c = config("max_size = 0\n");
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.at(0);
  EXPECT_FALSE(c.max_size);
  EXPECT_TRUE(detail::check_file_value(*find_setting("max_size"), "0").empty());
  // Over a limit of the file, the environment's 0 lifts it.
  EXPECT_FALSE(config("max_size = 1M\n", {{"JITCACHE_MAX_SIZE", "0"}}).max_size);
}

TEST_F(ConfigFileTest, ABadValueIsOneWarningNamingTheFileAndLineAndTheDefaultIsUsed) {
  const Config c = config("log = debug\nmax_size = banana\n");
  ASSERT_EQ(c.warnings.size(), 1u);
  const std::string where = (dir.path() / "jitcache.conf").string() + ":2: max_size = banana: ";
  EXPECT_EQ(c.warnings[0].rfind(where, 0), 0u) << c.warnings[0];
  EXPECT_NE(c.warnings[0].find("not a size"), std::string::npos) << c.warnings[0];
  EXPECT_FALSE(c.max_size);
  EXPECT_EQ(c.log_level, LogLevel::debug);
}

TEST_F(ConfigFileTest, DamagedAndUnknownLinesWarnAndTheOthersApply) {
  const std::string path = (dir.path() / "jitcache.conf").string();
  const Config c = config("max_size = 1M\nno equals sign\nmax_sise = 2M\nlog = de\xff"
                          "bug\nMAX_SIZE = 3M\nreadonly = 1\r\ndisable = cuda\n",
                          {});
  EXPECT_EQ(c.max_size, 1u << 20);
  EXPECT_TRUE(c.read_only) << "a CRLF line is a line";
  EXPECT_EQ(c.log_level, LogLevel::warn);
  EXPECT_FALSE(c.persistence("cuda").enabled);
  EXPECT_TRUE(has_warning(c, path + ":2: not a `key = value` line")) << c.warnings.at(0);
  EXPECT_TRUE(has_warning(c, path + ":3: unknown key 'max_sise'"));
  EXPECT_TRUE(has_warning(c, path + ":4: a damaged line (bytes that are not UTF-8)"));
  EXPECT_TRUE(has_warning(c, path + ":5: unknown key 'MAX_SIZE'"));
  EXPECT_EQ(c.warnings.size(), 4u);
}

// The std::string above stops at its NUL; this one keeps it.
TEST_F(ConfigFileTest, ANulByteDamagesItsLineOnly) {
  using namespace std::string_literals;
  const std::string text = "opencl_store = wa\0it\nlog = info\n"s;
  const Config c = config(text);
  EXPECT_EQ(c.opencl_store, StoreMode::detach);
  EXPECT_EQ(c.log_level, LogLevel::info);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find(":1: a damaged line (a control character (byte 0))"),
            std::string::npos)
      << c.warnings[0];
}

TEST_F(ConfigFileTest, WarningsOfOneFileAreBounded) {
  std::string text;
  for (int i = 0; i < 1000; ++i)
    text += "garbage " + std::to_string(i) + "\n";
  const Config c = config(text + "log = info\n");
  EXPECT_EQ(c.log_level, LogLevel::info);
  ASSERT_EQ(c.warnings.size(), detail::k_config_file_max_warnings);
  EXPECT_NE(c.warnings.back().find("(and 992 more such problems)"), std::string::npos)
      << c.warnings.back();
}

// The remote key is a secret: the file may not give it, a `remote_key` line is refused without
// its value in the warning, and, being a key asked for that cannot be used, turns the remote
// tiers off (not on, reading whatever the server holds) unless the environment gives a key.
TEST_F(ConfigFileTest, ARemoteKeyInTheFileIsRefusedAndTheRemoteTiersFailClosed) {
  const std::string text = "remote = redis://127.0.0.1:6379?unsigned=1\nremote_key = hunter2\n";
  Config c = config(text);
  EXPECT_TRUE(c.remote.empty());
  EXPECT_TRUE(c.remote_key.empty());
  EXPECT_TRUE(has_warning(c, ":2: remote_key is not read from this file"));
  EXPECT_TRUE(has_warning(c, "the remote tiers are off"));
  for (const std::string& warning : c.warnings)
    EXPECT_EQ(warning.find("hunter2"), std::string::npos) << warning;
  EXPECT_EQ(c.variables.count("JITCACHE_REMOTE_KEY"), 0u);
  // A config made again from its variables (the Python module's, a child's environment) too.
  EXPECT_TRUE(Config::from_variables(c.variables).remote.empty());

  c = config(text, {{"JITCACHE_REMOTE_KEY", "from the environment"}});
  EXPECT_EQ(c.remote, "redis://127.0.0.1:6379?unsigned=1");
  EXPECT_EQ(c.remote_key, "from the environment");

  // A key file is fine, given absolutely; a refused one turns the remote tiers off as in the
  // environment; a relative one is refused in the file and is a key asked for, too.
  const fs::path key = dir.path() / "key";
  std::ofstream(key) << "s3cret\n";
  ::chmod(key.c_str(), 0600);
  c = config("remote = redis://127.0.0.1:6379\nremote_key_file = " + key.string() + "\n");
  EXPECT_EQ(c.remote_key, "s3cret");
  EXPECT_EQ(c.remote, "redis://127.0.0.1:6379");
  ::chmod(key.c_str(), 0644);
  c = config("remote = redis://127.0.0.1:6379?unsigned=1\nremote_key_file = " + key.string() +
             "\n");
  EXPECT_TRUE(c.remote.empty());
  EXPECT_TRUE(has_warning(c, ":2: remote_key_file = " + key.string() + ": the key file must"));
  c = config("remote = redis://127.0.0.1:6379?unsigned=1\nremote_key_file = key\n");
  EXPECT_TRUE(c.remote.empty());
  EXPECT_TRUE(has_warning(c, ":2: remote_key_file = key: a relative path"));
}

TEST_F(ConfigFileTest, OneRunsSettingsAndRelativePathsAreNotRead) {
  const Config c = config("record = /tmp/r.jsonl\ntune = retune\ndir = cache\n"
                          "system_path = /a:b\nsystem_path = :\n");
  EXPECT_TRUE(c.record.empty());
  EXPECT_EQ(c.tune, TuneMode::off);
  EXPECT_EQ(c.cache_dir, "/c/v1");
  EXPECT_TRUE(c.system_path.empty()) << "`:` (none) is no relative path";
  EXPECT_TRUE(has_warning(c, ":1: record is not read from this file"));
  EXPECT_TRUE(has_warning(c, ":2: tune is not read from this file"));
  EXPECT_TRUE(has_warning(c, ":3: dir = cache: a relative path"));
  EXPECT_TRUE(has_warning(c, ":4: system_path = /a:b: a relative path"));
  EXPECT_EQ(c.warnings.size(), 4u);
}

// A file someone else could have written could point the cache at their binaries.
TEST_F(ConfigFileTest, AFileOthersMayWriteIsNotRead) {
  const fs::path path = write("max_size = 1M\n");
  ::chmod(path.c_str(), 0666);
  Config c = config_from({{"JITCACHE_DIR", "/c"}}, read_config_file(path));
  EXPECT_FALSE(c.max_size);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("mode 0666"), std::string::npos) << c.warnings[0];
  if (::geteuid() == 0) {
    ::chmod(path.c_str(), 0644);
    ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
    c = config_from({{"JITCACHE_DIR", "/c"}}, read_config_file(path));
    EXPECT_FALSE(c.max_size);
    EXPECT_TRUE(has_warning(c, "uid 65534"));
  }
}

TEST_F(ConfigFileTest, ALargeFileOrADirectoryIsOneWarning) {
  Config c = config(std::string(detail::k_config_file_max_bytes + 1, '#'));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("over the limit"), std::string::npos) << c.warnings[0];
  fs::create_directory(dir.path() / "folder");
  c = config_from({}, read_config_file(dir.path() / "folder"));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("a directory"), std::string::npos) << c.warnings[0];
}

// A FIFO where the file should be is refused at once, never waited on for a writer that does
// not come (this test would hang).
TEST_F(ConfigFileTest, AFifoIsNotWaitedOn) {
  const fs::path fifo = dir.path() / "jitcache.conf";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Config c = config_from({{"JITCACHE_DIR", "/c"}}, read_config_file(fifo));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("a FIFO, not a regular file"), std::string::npos) << c.warnings[0];
  EXPECT_NE(c.warnings[0].find(fifo.string()), std::string::npos) << c.warnings[0];
}

// Config::from_environment reads the file once per process: a change under a running process
// does not change its settings. In a child: the environment and the read are its own.
TEST_F(ConfigFileTest, FromEnvironmentReadsTheFileOncePerProcess) {
  const fs::path path = write("max_size = 1M\n");
  test::ChildProcess child([&] {
    ::setenv("JITCACHE_CONFIG_FILE", path.c_str(), 1);
    ::unsetenv("JITCACHE_MAX_SIZE");
    if (Config::from_environment().max_size != (1u << 20))
      return 1;
    std::ofstream(path, std::ios::trunc) << "max_size = 2M\n";
    if (Config::from_environment().max_size != (1u << 20))
      return 2;
    ::setenv("JITCACHE_MAX_SIZE", "3M", 1);
    if (Config::from_environment().max_size != (3u << 20))
      return 3;
    ::setenv("JITCACHE_CONFIG_FILE", "", 1);
    ::unsetenv("JITCACHE_MAX_SIZE");
    return Config::from_environment().max_size ? 4 : 0;
  });
  EXPECT_EQ(child.wait(), 0) << child.err();
}

// Damaged bytes: random flips, insertions, deletions and truncations of a good file. Nothing
// crashes; every warning names the file; a setting applies only as a whole line of the damaged
// file says it (never a half-parsed value), and a line left whole still applies when no other
// line gives its key.
TEST_F(ConfigFileTest, RandomlyDamagedFilesNeverApplyGarbage) {
  const std::string good = "# jitcache\nmax_size = 3M\nlog = debug\nreadonly = 1\n"
                           "opencl_store = wait\ndisable = cuda,hip\n";
  // 200 trials of each kind of damage (JITCACHE_HOSTILE_TRIALS, as the other hostile-input
  // tests: fewer under the sanitizers), from a fixed seed that JITCACHE_HOSTILE_SEED changes (a
  // failure names the seed and trial that replay it).
  const char* trials_variable = std::getenv("JITCACHE_HOSTILE_TRIALS");
  const int trials = trials_variable ? std::atoi(trials_variable) : 200;
  const char* seed_variable = std::getenv("JITCACHE_HOSTILE_SEED");
  const std::uint32_t seed =
      seed_variable ? static_cast<std::uint32_t>(std::stoul(seed_variable)) : 20261126u;
  std::printf("RandomlyDamagedFilesNeverApplyGarbage: seed %u, %d trials of each of 4 kinds "
              "(JITCACHE_HOSTILE_SEED, JITCACHE_HOSTILE_TRIALS)\n",
              seed, trials);
  const char* const k_kinds[] = {"flipped bytes", "inserted bytes", "deleted bytes", "truncated"};
  const fs::path path = dir.path() / "jitcache.conf";
  // The lines of `text` whose key (before '=', trimmed) is `key`.
  const auto lines_of = [](const std::string& text, const std::string& key) {
    std::vector<std::string> found;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      const std::size_t eq = line.find('=');
      std::string left = line.substr(0, eq);
      left.erase(0, left.find_first_not_of(" \t"));
      left.erase(left.find_last_not_of(" \t") + 1);
      if (eq != std::string::npos && left == key)
        found.push_back(line);
    }
    return found;
  };
  for (int trial = 0; trial < 4 * trials; ++trial) {
    const int kind = trial / trials;
    // A generator per trial: trial N of seed S is the same alone as in the whole run.
    std::mt19937 rng(seed + static_cast<std::uint32_t>(trial));
    std::string text = good;
    const int damages = 1 + static_cast<int>(rng() % 4);
    for (int d = 0; d < damages && !text.empty(); ++d) {
      const std::size_t at = rng() % text.size();
      switch (kind) {
      case 0:
        text[at] = static_cast<char>(rng() % 256);
        break;
      case 1:
        text.insert(at, 1, static_cast<char>(rng() % 256));
        break;
      case 2:
        text.erase(at, 1 + rng() % 8);
        break;
      default:
        text.resize(at);
      }
    }
    const std::string context = "seed " + std::to_string(seed) + ", trial " +
                                std::to_string(trial) + " (" + k_kinds[kind] + "), file:\n" + text;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    const ConfigFileContents file = read_config_file(path);
    const Config c = config_from({{"JITCACHE_DIR", "/c"}}, file);
    for (const std::string& warning : c.warnings)
      ASSERT_EQ(warning.rfind(path.string(), 0), 0u) << warning << "\n" << context;
    ASSERT_LE(file.warnings.size(), detail::k_config_file_max_warnings) << context;
    // Each value applied is a whole line's.
    const auto values_of = [&](const std::string& key) {
      std::vector<std::string> values;
      for (std::string line : lines_of(text, key)) {
        if (!line.empty() && line.back() == '\r')
          line.pop_back();
        std::string value = line.substr(line.find('=') + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        value.erase(value.find_last_not_of(" \t") + 1);
        values.push_back(value);
      }
      return values;
    };
    for (const auto& [name, setting] : file.settings) {
      const auto values = values_of(file_key(name));
      EXPECT_NE(std::find(values.begin(), values.end(), setting.value), values.end())
          << name << " = " << setting.value << "\n"
          << context;
      for (const char byte : setting.value)
        ASSERT_TRUE(byte == '\t' || static_cast<unsigned char>(byte) >= 0x20) << context;
    }
    if (c.max_size) {
      const auto values = values_of("max_size");
      EXPECT_TRUE(std::any_of(values.begin(), values.end(), [&](const std::string& v) {
        return parse_size(v) == c.max_size;
      })) << context;
    }
    // A line left whole, its key given by no other line: it applies.
    const auto whole = [&](const std::string& line, const std::string& key) {
      const auto lines = lines_of(text, key);
      return lines.size() == 1 && lines[0] == line;
    };
    if (whole("max_size = 3M", "max_size")) {
      EXPECT_EQ(c.max_size, 3u << 20) << context;
    }
    if (whole("log = debug", "log")) {
      EXPECT_EQ(c.log_level, LogLevel::debug) << context;
    }
    if (whole("readonly = 1", "readonly")) {
      EXPECT_TRUE(c.read_only) << context;
    }
    if (whole("opencl_store = wait", "opencl_store")) {
      EXPECT_EQ(c.opencl_store, StoreMode::wait) << context;
    }
    if (HasFailure())
      return;
  }
}

TEST_F(ConfigFileTest, CheckFileValueUsesTheEnvironmentsParser) {
  const EnvVariable& max_size = *find_setting("max_size");
  EXPECT_TRUE(detail::check_file_value(max_size, "5G").empty());
  auto complaints = detail::check_file_value(max_size, "5Q");
  ASSERT_EQ(complaints.size(), 1u);
  EXPECT_EQ(complaints[0], "not a size such as 10G or 512M (0: no limit)");
  EXPECT_FALSE(detail::check_file_value(max_size, "").empty());
  EXPECT_FALSE(detail::check_file_value(max_size, "1M\nlog = debug").empty());
  EXPECT_FALSE(detail::check_file_value(*find_setting("log"), "loud").empty());
  EXPECT_FALSE(detail::check_file_value(*find_setting("dir"), "relative").empty());
  EXPECT_TRUE(detail::check_file_value(*find_setting("dir"), "/absolute").empty());
  EXPECT_FALSE(detail::check_file_value(*find_setting("remote"), "http://x").empty());
}

// A write keeps every other line (comments, damaged ones) as it is, replaces the key's first
// line, drops its later ones, and leaves no temporary file.
TEST_F(ConfigFileTest, WritingASettingKeepsTheOtherLines) {
  const fs::path path = write("# mine\nmax_size = 1M\nbad line\nlog = info\nmax_size = 2M\n");
  ASSERT_TRUE(detail::write_config_setting(path, *find_setting("max_size"), "5G"));
  ASSERT_TRUE(detail::write_config_setting(path, *find_setting("readonly"), "1"));
  ASSERT_TRUE(detail::write_config_setting(path, *find_setting("log"), std::nullopt));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "# mine\nmax_size = 5G\nbad line\nreadonly = 1\n");
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path()))
    names.insert(entry.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"jitcache.conf", "jitcache.conf.lock"}));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "its mode is kept";

  // A new file, in a new folder: private.
  const fs::path fresh = dir.path() / "new" / "jitcache.conf";
  ASSERT_TRUE(detail::write_config_setting(fresh, *find_setting("max_size"), "0"));
  ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(config_from({}, read_config_file(fresh)).variables.at("JITCACHE_MAX_SIZE"), "0");

  // Through a symbolic link: its target is written, the link stays.
  const fs::path link = dir.path() / "link.conf";
  fs::create_symlink(fresh, link);
  ASSERT_TRUE(detail::write_config_setting(link, *find_setting("log"), "debug"));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_config_file(fresh).settings.at("JITCACHE_LOG").value, "debug");
}

TEST_F(ConfigFileTest, WritingOverAFifoFailsWithoutWaiting) {
  const fs::path fifo = dir.path() / "jitcache.conf";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto written = detail::write_config_setting(fifo, *find_setting("max_size"), "1M");
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message.find("a FIFO"), std::string::npos) << written.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "left as it is";
}

} // namespace
} // namespace jitcache
