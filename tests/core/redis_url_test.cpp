// JITCACHE_REMOTE's URLs: what each part sets, and one clear complaint per bad URL.
#include "core/tiers/remote/redis_url.hpp"

#include <gtest/gtest.h>

namespace jitcache {

using detail::hide_passwords;
using detail::k_remote_timeout;
using detail::parse_redis_url;
using detail::parse_redis_urls;
namespace {

TEST(RedisUrlTest, EveryPartIsRead) {
  auto url = parse_redis_url("redis://me:p%40ss@cache.example:6380/3?timeout_ms=250&backoff_ms=0"
                             "&prefix=team%3A&readonly=1&unsigned=1&max_bytes=1000");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(url->user, "me");
  EXPECT_EQ(url->password, "p@ss");
  EXPECT_EQ(url->host, "cache.example");
  EXPECT_EQ(url->port, 6380);
  EXPECT_EQ(url->db, 3);
  EXPECT_EQ(url->timeout.count(), 250);
  EXPECT_EQ(url->back_off.count(), 0);
  EXPECT_EQ(url->prefix, "team:");
  EXPECT_TRUE(url->read_only);
  EXPECT_TRUE(url->allow_unsigned);
  EXPECT_EQ(url->max_bytes, 1000u);
  EXPECT_EQ(url->display(), "redis://me:***@cache.example:6380/3");
}

TEST(RedisUrlTest, DefaultsAndShortForms) {
  auto url = parse_redis_url("redis://h");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->port, 6379);
  EXPECT_EQ(url->db, 0);
  EXPECT_EQ(url->timeout, k_remote_timeout);
  EXPECT_EQ(url->prefix, "jitcache:v1:");
  EXPECT_FALSE(url->read_only);
  auto password_only = parse_redis_url("redis://secret@[::1]:7000");
  ASSERT_TRUE(password_only) << password_only.error().message;
  EXPECT_EQ(password_only->password, "secret");
  EXPECT_EQ(password_only->user, "");
  EXPECT_EQ(password_only->host, "::1");
  EXPECT_EQ(password_only->port, 7000);
}

TEST(RedisUrlTest, EachBadUrlIsOneComplaintAndTheGoodOnesAreKept) {
  std::vector<std::string> complaints;
  auto urls = parse_redis_urls(
      "redis://a:1, http://x ,redis://u:hunter2@b:99999,redis://c?timeout_ms=0,redis://d?x=1,"
      "redis://e:2/db,redis://f:3",
      complaints);
  ASSERT_EQ(urls.size(), 2u);
  EXPECT_EQ(urls[0].host, "a");
  EXPECT_EQ(urls[1].host, "f");
  ASSERT_EQ(complaints.size(), 5u);
  for (const std::string& complaint : complaints) {
    EXPECT_NE(complaint.find("that remote is skipped"), std::string::npos) << complaint;
    EXPECT_EQ(complaint.find("hunter2"), std::string::npos) << complaint;
  }
  EXPECT_NE(complaints[1].find("port"), std::string::npos) << complaints[1];
  EXPECT_NE(complaints[3].find("unknown parameter 'x'"), std::string::npos) << complaints[3];
}

TEST(RedisUrlTest, PasswordsAreHidden) {
  EXPECT_EQ(hide_passwords("redis://u:pw@h:1/2,redis://pw@h,redis://h:3"),
            "redis://u:***@h:1/2,redis://***@h,redis://h:3");
  // Unescaped '/', '?' or ',' in a password: nothing of it shows.
  EXPECT_EQ(hide_passwords("redis://u:pa/ss@h"), "redis://u:***@h");
  EXPECT_EQ(hide_passwords("redis://u:pa?ss@h:1"), "redis://u:***@h:1");
  EXPECT_EQ(hide_passwords("redis://u:pa,ss@h"), "redis://u:***,***@h");
  EXPECT_EQ(hide_passwords("redis://[::1]:6379/0?prefix=x"), "redis://[::1]:6379/0?prefix=x");
}

TEST(RedisUrlTest, AnAbsurdMaxBytesIsRefused) {
  // Near 2^64, the value plus the seal's bytes wrapped and every entry was "too large".
  for (const char* value : {"18446744073709551615", "18446744073709551600", "4294967297"}) {
    auto url = parse_redis_url(std::string("redis://h?max_bytes=") + value);
    ASSERT_FALSE(url) << value;
    EXPECT_NE(url.error().message.find("max_bytes"), std::string::npos) << url.error().message;
  }
  auto largest = parse_redis_url("redis://h?max_bytes=4294967296");
  ASSERT_TRUE(largest) << largest.error().message;
  EXPECT_EQ(largest->max_bytes, 4294967296u);
}

} // namespace
} // namespace jitcache
