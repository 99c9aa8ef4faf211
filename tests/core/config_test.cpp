#include "core/config/config_table.hpp"

#include <jitcache/cache.hpp>

#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace jitcache {

using detail::env_table;
using detail::EnvRole;
using detail::EnvVariable;
using detail::shown_value;
namespace {

TEST(ConfigTest, DefaultsFromHomeAndXdg) {
  auto c = Config::from_variables({{"HOME", "/home/u"}});
  EXPECT_EQ(c.cache_dir, "/home/u/.cache/jitcache/v1");
  c = Config::from_variables({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/xdg"}});
  EXPECT_EQ(c.cache_dir, "/xdg/jitcache/v1");
  c = Config::from_variables({});
  EXPECT_TRUE(c.cache_dir.empty());
  EXPECT_FALSE(c.persistence("opencl").enabled);
  EXPECT_TRUE(c.warnings.empty());
}

TEST(ConfigTest, JitcacheDirCarriesFormatVersion) {
  auto c = Config::from_variables({{"JITCACHE_DIR", "/tmp/x"}, {"HOME", "/home/u"}});
  EXPECT_EQ(c.cache_dir, "/tmp/x/v1");
}

TEST(ConfigTest, GoodValues) {
  auto c = Config::from_variables({{"JITCACHE_DIR", "/c"},
                                   {"JITCACHE_MAX_SIZE", "10G"},
                                   {"JITCACHE_READONLY", "true"},
                                   {"JITCACHE_SYSTEM_PATH", "/a:/b::/c"},
                                   {"JITCACHE_REMOTE", "redis://127.0.0.1:6379?unsigned=1"},
                                   {"JITCACHE_LOG", "debug"},
                                   {"JITCACHE_DISABLE", "cuda,hip"}});
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(c.max_size, 10ull << 30);
  EXPECT_TRUE(c.read_only);
  ASSERT_EQ(c.system_path.size(), 3u);
  EXPECT_EQ(c.system_path[1], "/b");
  EXPECT_EQ(c.remote, "redis://127.0.0.1:6379?unsigned=1");
  EXPECT_EQ(c.log_level, LogLevel::debug);
  EXPECT_TRUE(c.persistence("opencl").enabled);
  EXPECT_FALSE(c.persistence("cuda").enabled);
  EXPECT_FALSE(c.persistence("hip").enabled);
}

TEST(ConfigTest, EachBadValueGivesOneWarningNamingTheVariableAndTheDefault) {
  const std::pair<const char*, const char*> bad[] = {
      {"JITCACHE_MAX_SIZE", "banana"},        {"JITCACHE_MAX_SIZE", "-5G"},
      {"JITCACHE_READONLY", "maybe"},         {"JITCACHE_REMOTE", "http://x"},
      {"JITCACHE_REMOTE", "redis://h:99999"}, {"JITCACHE_LOG", "loud"},
      {"JITCACHE_DISABLE", "opencl,metal"},
  };
  for (const auto& [name, value] : bad) {
    auto c = Config::from_variables({{"JITCACHE_DIR", "/c"}, {name, value}});
    ASSERT_EQ(c.warnings.size(), 1u) << name << "=" << value;
    EXPECT_NE(c.warnings[0].find(name), std::string::npos) << c.warnings[0];
    EXPECT_FALSE(c.max_size);
    EXPECT_FALSE(c.read_only);
    EXPECT_TRUE(c.remote.empty());
    EXPECT_EQ(c.log_level, LogLevel::warn);
  }
  // The good part of a partly bad list is kept.
  auto c = Config::from_variables({{"JITCACHE_DIR", "/c"}, {"JITCACHE_DISABLE", "opencl,metal"}});
  EXPECT_FALSE(c.persistence("opencl").enabled);
}

TEST(ConfigTest, SecretsNeverAppearInWarnings) {
  auto c = Config::from_variables({{"JITCACHE_DIR", "/c"},
                                   {"JITCACHE_REMOTE", "redis://u:hunter2@h:99999,redis://ok"},
                                   {"JITCACHE_REMOTE_KEY", "zq9"},
                                   {"JITCACHE_REMOTE_KEY_FILE", "/nonexistent"}});
  EXPECT_EQ(c.remote, "redis://ok");
  EXPECT_EQ(c.remote_key, "zq9");
  ASSERT_EQ(c.warnings.size(), 2u);
  for (const std::string& warning : c.warnings)
    EXPECT_EQ(warning.find("hunter2"), std::string::npos) << warning;
  EXPECT_NE(c.warnings[1].find("using JITCACHE_REMOTE_KEY"), std::string::npos) << c.warnings[1];
  EXPECT_EQ(shown_value("JITCACHE_REMOTE_KEY", "zq9").find("zq9"), std::string::npos);
}

// 0 is "no limit" (as ccache's max_size = 0 and `jitcache prune --max-size 0`): not a mistake.
TEST(ConfigTest, MaxSizeZeroIsNoLimitWithoutAWarning) {
  auto c = Config::from_variables({{"JITCACHE_DIR", "/c"}, {"JITCACHE_MAX_SIZE", "0"}});
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.at(0);
  EXPECT_FALSE(c.max_size);
}

TEST(ConfigTest, ParseSize) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("512M"), 512ull << 20);
  EXPECT_EQ(parse_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(parse_size("2k"), 2048u);
  EXPECT_EQ(parse_size("1T"), 1ull << 40);
  EXPECT_FALSE(parse_size(""));
  EXPECT_FALSE(parse_size("G"));
  EXPECT_FALSE(parse_size("1..2G"));
  EXPECT_FALSE(parse_size("-1"));
  EXPECT_FALSE(parse_size("99999999999T"));
}

// A runtime's own cache control that turns jitcache's persistent tiers off is said to the
// application once per process, at its first request of that backend: which variable, what it
// costs, how to keep jitcache's cache. In a child: the notice is once per process.
TEST(ConfigTest, RuntimeCacheControlThatTurnsTiersOffIsSaidOnce) {
  test::TempDir dir;
  test::ChildProcess child([&] {
    Cache cache(Config::from_variables({{"JITCACHE_DIR", dir.path().string()},
                                        {"POCL_KERNEL_CACHE", "0"},
                                        {"CUDA_CACHE_DISABLE", "0"}}));
    const bool off = !cache.persistent("opencl") && !cache.persistent("opencl");
    return off && cache.persistent("cuda") ? 0 : 1;
  });
  ASSERT_EQ(child.wait(), 0) << child.err();
  const std::string& err = child.err();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  for (const char* part :
       {"jitcache: warning: ", "OpenCL", "POCL_KERNEL_CACHE=0", "JITCACHE_DISABLE=0"})
    EXPECT_NE(err.find(part), std::string::npos) << part << " in: " << err;

  // Off for another reason (JITCACHE_DISABLE asks for it): nothing said.
  test::ChildProcess quiet([&] {
    Cache cache(Config::from_variables({{"JITCACHE_DIR", dir.path().string()},
                                        {"POCL_KERNEL_CACHE", "0"},
                                        {"JITCACHE_DISABLE", "opencl"}}));
    return cache.persistent("opencl") ? 1 : 0;
  });
  ASSERT_EQ(quiet.wait(), 0) << quiet.err();
  EXPECT_EQ(quiet.err(), "");
}

TEST(ConfigTest, RuntimeCacheControlsAreHonouredUnlessOverridden) {
  auto c = Config::from_variables({{"JITCACHE_DIR", "/c"}, {"POCL_KERNEL_CACHE", "0"}});
  EXPECT_FALSE(c.persistence("opencl").enabled);
  EXPECT_NE(c.persistence("opencl").reason.find("POCL_KERNEL_CACHE=0"), std::string::npos);
  EXPECT_TRUE(c.persistence("cuda").enabled);

  c = Config::from_variables({{"JITCACHE_DIR", "/c"}, {"CUDA_CACHE_DISABLE", "1"}});
  EXPECT_FALSE(c.persistence("cuda").enabled);
  EXPECT_TRUE(c.persistence("opencl").enabled);

  c = Config::from_variables(
      {{"JITCACHE_DIR", "/c"}, {"CUDA_CACHE_DISABLE", "1"}, {"JITCACHE_DISABLE", "0"}});
  EXPECT_TRUE(c.persistence("cuda").enabled);

  c = Config::from_variables({{"JITCACHE_DIR", "/c"}, {"JITCACHE_DISABLE", "1"}});
  for (const char* b : k_backends)
    EXPECT_FALSE(c.persistence(b).enabled);
}

// The settings jitcache's own variables give, without the raw variables and warnings.
void expect_same_settings(const Config& a, const Config& b, const std::string& context) {
  EXPECT_EQ(a.cache_dir, b.cache_dir) << context;
  EXPECT_EQ(a.disable_all, b.disable_all) << context;
  EXPECT_EQ(a.disabled_backends, b.disabled_backends) << context;
  EXPECT_EQ(a.disable_explicitly_off, b.disable_explicitly_off) << context;
  EXPECT_EQ(a.read_only, b.read_only) << context;
  EXPECT_EQ(a.max_size, b.max_size) << context;
  EXPECT_EQ(a.system_path, b.system_path) << context;
  EXPECT_EQ(a.remote, b.remote) << context;
  EXPECT_EQ(a.remote_key, b.remote_key) << context;
  EXPECT_EQ(a.log_level, b.log_level) << context;
  EXPECT_EQ(a.opencl_store, b.opencl_store) << context;
  EXPECT_EQ(a.record, b.record) << context;
  EXPECT_EQ(a.tune, b.tune) << context;
}

// One good and the bad values of a setting, and what the good one must set.
struct SettingCase {
  const char* good;
  std::function<void(const Config&)> check_good;
  std::vector<const char*> bad; // empty: every value is accepted
};

// A key file of `mode` holding "key\n", in a directory that lives as long as the test binary.
const char* key_file(const char* name, mode_t mode) {
  static test::TempDir dir;
  static std::map<std::string, std::string> paths;
  std::string& path = paths[name];
  if (path.empty()) {
    path = (dir.path() / name).string();
    std::ofstream(path) << "key\n";
    ::chmod(path.c_str(), mode);
  }
  return path.c_str();
}

const std::map<std::string, SettingCase>& setting_cases() {
  static const std::map<std::string, SettingCase> cases = {
      {"JITCACHE_DIR",
       {"/elsewhere", [](const Config& c) { EXPECT_EQ(c.cache_dir, "/elsewhere/v1"); }, {}}},
      {"JITCACHE_DISABLE",
       {"hip",
        [](const Config& c) {
          EXPECT_EQ(c.disabled_backends, std::set<std::string>{"hip"});
          EXPECT_FALSE(c.disable_all);
        },
        {"metal", "maybe"}}},
      {"JITCACHE_READONLY",
       {"yes", [](const Config& c) { EXPECT_TRUE(c.read_only); }, {"maybe", "2"}}},
      {"JITCACHE_MAX_COMPILES",
       {"4", [](const Config& c) { EXPECT_EQ(c.max_compiles, 4u); }, {"0", "many", "-1", "4x"}}},
      {"JITCACHE_MAX_SIZE",
       {"512M",
        [](const Config& c) { EXPECT_EQ(c.max_size, 512ull << 20); },
        {"banana", "-5G", "99999999999T"}}},
      {"JITCACHE_SYSTEM_PATH",
       {"/a::/b",
        [](const Config& c) {
          EXPECT_EQ(c.system_path, (std::vector<std::filesystem::path>{"/a", "/b"}));
        },
        {}}},
      {"JITCACHE_REMOTE",
       {"redis://cache.example:6379?unsigned=1",
        [](const Config& c) { EXPECT_EQ(c.remote, "redis://cache.example:6379?unsigned=1"); },
        {"http://x", "redis://h:99999", "redis://:6379", "redis://h:", "redis://",
         "redis://h?readonly=2"}}},
      {"JITCACHE_RECORD",
       {"/tmp/record.jsonl",
        [](const Config& c) { EXPECT_EQ(c.record, "/tmp/record.jsonl"); },
        {}}},
      {"JITCACHE_REMOTE_KEY",
       {"s3cret",
        [](const Config& c) {
          EXPECT_EQ(c.remote_key, "s3cret");
          EXPECT_EQ(c.remote_key_source, "JITCACHE_REMOTE_KEY");
        },
        {}}},
      {"JITCACHE_REMOTE_KEY_FILE",
       {key_file("good", 0600),
        [](const Config& c) {
          EXPECT_EQ(c.remote_key, "key");
          EXPECT_NE(c.remote_key_source.find("JITCACHE_REMOTE_KEY_FILE="), std::string::npos);
        },
        {key_file("readable", 0644), key_file("group", 0660), "/nonexistent/key"}}},
      {"JITCACHE_LOG",
       {"info", [](const Config& c) { EXPECT_EQ(c.log_level, LogLevel::info); }, {"loud"}}},
      {"JITCACHE_OPENCL_STORE",
       {"wait",
        [](const Config& c) { EXPECT_EQ(c.opencl_store, StoreMode::wait); },
        {"later", "1"}}},
      {"JITCACHE_OPENCL_LAYER",
       {"off", [](const Config& c) { EXPECT_FALSE(c.opencl_layer); }, {"sometimes", "2"}}},
      {"JITCACHE_NVRTC",
       {"0",
        [](const Config& c) { EXPECT_EQ(c.front_ends_off, std::set<std::string>{"nvrtc"}); },
        {"sometimes", "2"}}},
      {"JITCACHE_HIPRTC",
       {"no",
        [](const Config& c) { EXPECT_EQ(c.front_ends_off, std::set<std::string>{"hiprtc"}); },
        {"sometimes", "2"}}},
      {"JITCACHE_TUNE",
       {"Missing",
        [](const Config& c) { EXPECT_EQ(c.tune, TuneMode::missing); },
        {"sometimes", "1", "exhaustive"}}},
  };
  return cases;
}

TEST(ConfigTableTest, EveryVariableIsListedOnceWithItsDocumentation) {
  std::set<std::string> names;
  for (const EnvVariable& v : env_table()) {
    EXPECT_TRUE(names.insert(v.name).second) << v.name << " is listed twice";
    EXPECT_NE(std::string(v.doc), "") << v.name;
    EXPECT_EQ(v.parse != nullptr, v.role == EnvRole::setting) << v.name;
    EXPECT_EQ(v.off != nullptr, v.role == EnvRole::runtime_switch) << v.name;
    const bool has_backend = v.backend && std::string(v.backend) != "";
    EXPECT_EQ(has_backend, v.role == EnvRole::runtime_switch || v.role == EnvRole::compile)
        << v.name;
  }
  const std::vector<std::string> known = Config::known_variables();
  EXPECT_EQ(std::set<std::string>(known.begin(), known.end()), names);
  EXPECT_EQ(known.size(), names.size());
}

TEST(ConfigTableTest, EverySettingTakesItsGoodValueAndFallsBackOnEachBadOne) {
  const Config defaults = Config::from_variables({{"HOME", "/home/u"}});
  for (const EnvVariable& v : env_table()) {
    if (v.role != EnvRole::setting)
      continue;
    auto it = setting_cases().find(v.name);
    ASSERT_NE(it, setting_cases().end()) << v.name << " has no case in this test";
    const SettingCase& test = it->second;

    Config good = Config::from_variables({{"HOME", "/home/u"}, {v.name, test.good}});
    EXPECT_TRUE(good.warnings.empty()) << v.name << "=" << test.good;
    EXPECT_EQ(good.variables.at(v.name), test.good);
    test.check_good(good);

    // Empty is the same as unset (and is still reported as set).
    Config empty = Config::from_variables({{"HOME", "/home/u"}, {v.name, ""}});
    EXPECT_TRUE(empty.warnings.empty()) << v.name;
    EXPECT_EQ(empty.variables.count(v.name), 1u);
    expect_same_settings(empty, defaults, std::string(v.name) + " empty");

    for (const char* bad : test.bad) {
      const std::string context = std::string(v.name) + "=" + bad;
      Config c = Config::from_variables({{"HOME", "/home/u"}, {v.name, bad}});
      ASSERT_EQ(c.warnings.size(), 1u) << context;
      EXPECT_EQ(c.warnings[0].rfind(context + ": ", 0), 0u) << c.warnings[0];
      expect_same_settings(c, defaults, context);
    }
  }
}

TEST(ConfigTableTest, LocationsGiveTheDefaultDirectoryAndAreRecorded) {
  for (const EnvVariable& v : env_table()) {
    if (v.role != EnvRole::location)
      continue;
    Config c = Config::from_variables({{v.name, "/loc"}});
    EXPECT_TRUE(c.warnings.empty()) << v.name;
    EXPECT_EQ(c.variables.at(v.name), "/loc");
    const std::string name = v.name;
    if (name == "HOME")
      EXPECT_EQ(c.cache_dir, "/loc/.cache/jitcache/v1");
    else if (name == "XDG_CACHE_HOME")
      EXPECT_EQ(c.cache_dir, "/loc/jitcache/v1");
    else
      EXPECT_TRUE(c.cache_dir.empty()) << v.name;
  }
}

TEST(ConfigTableTest, EachRuntimeSwitchTurnsOffItsOwnBackendOnly) {
  for (const EnvVariable& v : env_table()) {
    if (v.role != EnvRole::runtime_switch)
      continue;
    Config off = Config::from_variables({{"JITCACHE_DIR", "/c"}, {v.name, v.off}});
    EXPECT_TRUE(off.warnings.empty()) << v.name;
    for (const char* backend : k_backends) {
      const PersistencePolicy policy = off.persistence(backend);
      if (std::string(backend) == v.backend) {
        EXPECT_FALSE(policy.enabled) << v.name;
        EXPECT_NE(policy.reason.find(std::string(v.name) + "=" + v.off), std::string::npos)
            << policy.reason;
      } else {
        EXPECT_TRUE(policy.enabled) << v.name << " and " << backend;
      }
    }
    Config kept = Config::from_variables(
        {{"JITCACHE_DIR", "/c"}, {v.name, v.off}, {"JITCACHE_DISABLE", "0"}});
    EXPECT_TRUE(kept.persistence(v.backend).enabled) << v.name;
    EXPECT_NE(kept.persistence(v.backend).reason.find("overridden"), std::string::npos);
    Config other = Config::from_variables({{"JITCACHE_DIR", "/c"}, {v.name, "something"}});
    EXPECT_TRUE(other.persistence(v.backend).enabled) << v.name << "=something";
  }
}

TEST(ConfigTableTest, RuntimeCacheVariablesAreOnlyRecorded) {
  const Config plain = Config::from_variables({{"JITCACHE_DIR", "/c"}});
  for (const EnvVariable& v : env_table()) {
    if (v.role != EnvRole::runtime_cache)
      continue;
    Config c = Config::from_variables({{"JITCACHE_DIR", "/c"}, {v.name, "0"}});
    EXPECT_TRUE(c.warnings.empty()) << v.name;
    EXPECT_EQ(c.variables.at(v.name), "0");
    expect_same_settings(c, plain, v.name);
    for (const char* backend : k_backends) {
      EXPECT_TRUE(c.persistence(backend).enabled) << v.name;
      EXPECT_TRUE(c.compile_environment(backend).empty()) << v.name;
    }
  }
}

TEST(ConfigTableTest, CompileVariablesEnterTheirBackendsKeyInTableOrder) {
  std::map<std::string, std::string> all;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> expected;
  for (const EnvVariable& v : env_table()) {
    if (v.role != EnvRole::compile)
      continue;
    const std::string value = std::string("value of ") + v.name;
    all.emplace(v.name, value);
    expected[v.backend].emplace_back(v.name, value);
    Config one = Config::from_variables({{v.name, value}});
    EXPECT_TRUE(one.warnings.empty()) << v.name;
    for (const char* backend : k_backends) {
      const auto env = one.compile_environment(backend);
      if (std::string(backend) == v.backend)
        EXPECT_EQ(env, (std::vector<std::pair<std::string, std::string>>{{v.name, value}}));
      else
        EXPECT_TRUE(env.empty()) << v.name << " in " << backend;
    }
  }
  const Config c = Config::from_variables(all);
  for (const char* backend : k_backends)
    EXPECT_EQ(c.compile_environment(backend), expected[backend]) << backend;
}

// The README's environment table says, word for word, what the table's documentation lines say.
TEST(ConfigTableTest, ReadmeEnvironmentTableMatchesTheDocumentation) {
  std::ifstream in(JITCACHE_README);
  ASSERT_TRUE(in) << JITCACHE_README;
  std::vector<std::string> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0)
      inside = line == "## Environment";
    else if (inside && line.rfind("| `", 0) == 0)
      rows.push_back(line);
  }
  ASSERT_FALSE(rows.empty()) << "no environment table in the README";
  std::set<std::string> used;
  for (const EnvVariable& v : env_table()) {
    const std::string quoted = std::string("`") + v.name;
    const std::string* found = nullptr;
    for (const std::string& row : rows) {
      const std::string names = row.substr(0, row.find(" | "));
      for (std::size_t at = names.find(quoted); at != std::string::npos;
           at = names.find(quoted, at + 1)) {
        const char next = names[at + quoted.size()];
        if (next == '`' || next == '=')
          found = &row;
      }
    }
    ASSERT_TRUE(found) << v.name << " is not in the README's environment table";
    EXPECT_EQ(found->substr(found->find(" | ") + 3), std::string(v.doc) + " |") << v.name;
    used.insert(*found);
  }
  EXPECT_EQ(used.size(), rows.size()) << "a README row names no variable jitcache reads";
}

// The OpenCL layer's switch: on unless turned off; a jitcache process started for another (the
// detached `jitcache store`) always has it off, whatever this process has.
TEST(ConfigTest, TheOpenCLLayerIsTurnedOffByItsVariableAndInJitcachesOwnProcesses) {
  EXPECT_TRUE(Config::from_variables({}).opencl_layer);
  EXPECT_FALSE(Config::from_variables({{"JITCACHE_OPENCL_LAYER", "0"}}).opencl_layer);
  EXPECT_FALSE(Config::from_variables({{"JITCACHE_OPENCL_LAYER", "off"}}).opencl_layer);
  auto bad = Config::from_variables({{"JITCACHE_OPENCL_LAYER", "banana"}});
  EXPECT_TRUE(bad.opencl_layer);
  ASSERT_EQ(bad.warnings.size(), 1u);
  EXPECT_NE(bad.warnings[0].find("JITCACHE_OPENCL_LAYER"), std::string::npos);
  const auto child = detail::child_environment({{"JITCACHE_OPENCL_LAYER", "1"}});
  EXPECT_EQ(std::count(child.begin(), child.end(), "JITCACHE_OPENCL_LAYER=0"), 1);
  EXPECT_EQ(
      std::count_if(child.begin(), child.end(),
                    [](const std::string& e) { return e.rfind("JITCACHE_OPENCL_LAYER=", 0) == 0; }),
      1);
}

TEST(ConfigTest, KnownVariablesAreRecorded) {
  auto c = Config::from_variables({{"JITCACHE_DIR", "/c"}, {"UNRELATED", "x"}});
  EXPECT_EQ(c.variables.count("JITCACHE_DIR"), 1u);
  EXPECT_EQ(c.variables.count("UNRELATED"), 0u);
}

} // namespace
} // namespace jitcache
