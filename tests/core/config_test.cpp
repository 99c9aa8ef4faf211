#include <jitcache/config.hpp>

#include <gtest/gtest.h>

namespace jitcache {
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
                                   {"JITCACHE_REMOTE", "redis://127.0.0.1:6379"},
                                   {"JITCACHE_LOG", "debug"},
                                   {"JITCACHE_DISABLE", "cuda,hip"}});
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(c.max_size, 10ull << 30);
  EXPECT_TRUE(c.read_only);
  ASSERT_EQ(c.system_path.size(), 3u);
  EXPECT_EQ(c.system_path[1], "/b");
  EXPECT_EQ(c.remote, "redis://127.0.0.1:6379");
  EXPECT_EQ(c.log_level, LogLevel::debug);
  EXPECT_TRUE(c.persistence("opencl").enabled);
  EXPECT_FALSE(c.persistence("cuda").enabled);
  EXPECT_FALSE(c.persistence("hip").enabled);
}

TEST(ConfigTest, EachBadValueGivesOneWarningNamingTheVariableAndTheDefault) {
  const std::pair<const char*, const char*> bad[] = {
      {"JITCACHE_MAX_SIZE", "banana"}, {"JITCACHE_MAX_SIZE", "-5G"},
      {"JITCACHE_MAX_SIZE", "0"},      {"JITCACHE_READONLY", "maybe"},
      {"JITCACHE_REMOTE", "http://x"}, {"JITCACHE_REMOTE", "redis://h:99999"},
      {"JITCACHE_LOG", "loud"},        {"JITCACHE_DISABLE", "opencl,metal"},
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

TEST(ConfigTest, KnownVariablesAreRecorded) {
  auto c = Config::from_variables({{"JITCACHE_DIR", "/c"}, {"UNRELATED", "x"}});
  EXPECT_EQ(c.variables.count("JITCACHE_DIR"), 1u);
  EXPECT_EQ(c.variables.count("UNRELATED"), 0u);
}

} // namespace
} // namespace jitcache
