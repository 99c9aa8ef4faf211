// `jitcache info`, `stats` and `remote ping|push|pull` against a real redis-server on loopback.
#include "core/tiers/remote/remote_store.hpp"
#include "tests/support/json_lines.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/scripted_redis.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>

namespace jitcache {

using detail::parse_redis_url;
using detail::RemoteStore;
namespace {

using test::json_lines;
using test::run_cli;

const std::string k_kernel = std::string(JITCACHE_KERNELS) + "/saxpy.cu";

class RemoteCommandTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!test::RedisServer::available())
      GTEST_SKIP() << "redis-server is not installed";
    server.start();
  }
  std::map<std::string, std::string> env(const test::TempDir& dir, bool remote = true,
                                         bool key = true) {
    std::map<std::string, std::string> out = {{"JITCACHE_DIR", dir.path().string()}};
    if (remote)
      out.emplace("JITCACHE_REMOTE", server.url());
    if (key)
      out.emplace("JITCACHE_REMOTE_KEY", "fleet secret");
    return out;
  }
  // Builds the kernel for a GPU that need not be present (NVRTC only); the line it reports.
  nlohmann::json build(const std::map<std::string, std::string>& env) {
    auto r = run_cli({"build", "--backend", "cuda", "--arch", "sm_80", "--json", k_kernel}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto lines = json_lines(r.out);
    return lines.empty() ? nlohmann::json() : lines[0];
  }
  nlohmann::json cuda_stats(const std::map<std::string, std::string>& env) {
    for (const auto& line : json_lines(run_cli({"stats", "--json"}, env).out))
      if (line["backend"] == "cuda")
        return line;
    return {};
  }
  test::RedisServer server;
  test::TempDir a, b, c;
};

TEST_F(RemoteCommandTest, StatsCountRemoteWritesAndHits) {
  EXPECT_EQ(build(env(a))["tier"], "compile");
  EXPECT_EQ(cuda_stats(env(a))["remote_writes"], 1);
  EXPECT_EQ(build(env(b))["tier"], "remote");
  const nlohmann::json stats = cuda_stats(env(b));
  EXPECT_EQ(stats["remote_hits"], 1);
  EXPECT_EQ(stats["hits_by_tier"]["remote"], 1);
  EXPECT_EQ(stats["remote_refused"], 0);
  // info says the same of each user tier's remote traffic.
  const auto info_a = test::run_cli({"info", "--json"}, env(a));
  ASSERT_EQ(info_a.exit_code, 0) << info_a.err;
  const auto counters_a = nlohmann::json::parse(info_a.out)["remote_counters"];
  EXPECT_EQ(counters_a["writes"], 1) << info_a.out;
  EXPECT_EQ(counters_a["hits"], 0) << info_a.out;
  const auto info_b = test::run_cli({"info"}, env(b));
  EXPECT_NE(info_b.out.find("counters: 1 hits, 0 writes, 0 refused, down 0 times"),
            std::string::npos)
      << info_b.out;
}

TEST_F(RemoteCommandTest, InfoShowsEachRemoteAndHidesSecrets) {
  auto with_password = env(a);
  with_password["JITCACHE_REMOTE"] = server.url() + ",redis://u:hunter2@127.0.0.1:1";
  auto r = run_cli({"info", "--json"}, with_password);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("hunter2"), std::string::npos);
  EXPECT_EQ(r.out.find("fleet secret"), std::string::npos);
  const nlohmann::json info = json_lines(r.out).at(0);
  ASSERT_EQ(info["remotes"].size(), 2u);
  EXPECT_EQ(info["remotes"][0]["reachable"], true);
  EXPECT_EQ(info["remotes"][0]["writable"], true);
  EXPECT_EQ(info["remotes"][1]["reachable"], false);
  EXPECT_EQ(info["remote_key"], "JITCACHE_REMOTE_KEY");

  // Without a key, a remote is used only when its URL says unsigned=1.
  r = run_cli({"info"}, env(a, true, false));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("remote: (none)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unsigned=1"), std::string::npos) << r.out;
  auto opted_in = env(a, false, false);
  opted_in["JITCACHE_REMOTE"] = server.url("?unsigned=1");
  r = run_cli({"info"}, opted_in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("reachable"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("whoever can write to the server can plant binaries"), std::string::npos)
      << r.out;
}

TEST_F(RemoteCommandTest, PingPushAndPull) {
  auto ping = run_cli({"remote", "ping", "--json"}, env(a));
  ASSERT_EQ(ping.exit_code, 0) << ping.err;
  EXPECT_EQ(json_lines(ping.out).at(0)["reachable"], true);

  build(env(a, false)); // in a's user tier only
  auto push = run_cli({"remote", "push", "--backend", "cuda", "--json"}, env(a));
  ASSERT_EQ(push.exit_code, 0) << push.err;
  EXPECT_EQ(json_lines(push.out).at(0)["copied"], 1);
  auto unsigned_push = run_cli({"remote", "push"}, env(a, true, false));
  EXPECT_EQ(unsigned_push.exit_code, 1) << unsigned_push.out;
  auto read_only = env(a, false);
  read_only["JITCACHE_REMOTE"] = server.url("?readonly=1");
  EXPECT_EQ(run_cli({"remote", "push"}, read_only).exit_code, 1);

  auto pull = run_cli({"remote", "pull", "--json"}, env(b));
  ASSERT_EQ(pull.exit_code, 0) << pull.err;
  EXPECT_EQ(json_lines(pull.out).at(0)["copied"], 1);
  EXPECT_EQ(build(env(b, false))["tier"], "user");
  // Signed with another key: nothing this process would load is pulled.
  auto other = env(c);
  other["JITCACHE_REMOTE_KEY"] = "another fleet";
  pull = run_cli({"remote", "pull", "--json"}, other);
  ASSERT_EQ(pull.exit_code, 0) << pull.err;
  EXPECT_EQ(json_lines(pull.out).at(0)["copied"], 0);
  EXPECT_EQ(json_lines(pull.out).at(0)["skipped"], 1);

  server.stop();
  ping = run_cli({"remote", "ping", "--json"}, env(a));
  EXPECT_EQ(ping.exit_code, 1);
  EXPECT_EQ(json_lines(ping.out).at(0)["reachable"], false);
  EXPECT_EQ(run_cli({"remote", "ping"}, env(a, false)).exit_code, 1); // no remote at all
}

// A key asked for that cannot be used: ping, push and pull each fail with one clear error and
// never talk to the remote trusting it.
TEST_F(RemoteCommandTest, AnUnusableKeyFailsClosed) {
  auto empty_key = env(a);
  empty_key["JITCACHE_REMOTE_KEY"] = "";
  auto missing_file = env(a, true, false);
  missing_file["JITCACHE_REMOTE_KEY_FILE"] = (a.path() / "no such key").string();
  for (const auto& variables : {empty_key, missing_file})
    for (const char* action : {"ping", "push", "pull"}) {
      auto r = run_cli({"remote", action}, variables);
      EXPECT_EQ(r.exit_code, 1) << action << ": " << r.out << r.err;
      EXPECT_NE(r.err.find("remote tiers are off"), std::string::npos) << action << ": " << r.err;
      EXPECT_EQ(r.err.find("fleet secret"), std::string::npos) << r.err;
    }
}

// `prefix=x*y:` is a name, not a glob: a real server holding `xy:` (shorter than the prefix)
// is listed without it (before: the listing threw and the tool died of SIGABRT).
TEST_F(RemoteCommandTest, PullWithAGlobPrefixTakesOnlyItsOwnKeys) {
  auto globbed = env(a, false);
  globbed["JITCACHE_REMOTE"] = server.url("?prefix=x*y:");
  build(globbed); // only in a's user tier
  ASSERT_EQ(run_cli({"remote", "push"}, globbed).exit_code, 0);
  RemoteStore raw(*parse_redis_url(server.url("?unsigned=1")), "");
  ASSERT_TRUE(raw.run({"SET", "xy:", "short"}));
  ASSERT_TRUE(raw.run({"SET", "xAy:" + std::string(64, '0'), "not ours"}));
  auto into_b = env(b, false);
  into_b["JITCACHE_REMOTE"] = globbed["JITCACHE_REMOTE"];
  auto pull = run_cli({"remote", "pull", "--json"}, into_b);
  ASSERT_EQ(pull.exit_code, 0) << pull.out << pull.err;
  EXPECT_EQ(json_lines(pull.out).at(0)["copied"], 1) << pull.out;
  EXPECT_EQ(json_lines(pull.out).at(0)["skipped"], 0) << pull.out;
}

// A server whose SCAN cursor never returns to 0: pull stops with an error (before: for ever).
TEST(RemotePullTest, AnEndlessScanEndsWithAnError) {
  test::ScriptedRedis server([](const std::vector<std::string>& command) {
    using S = test::ScriptedRedis;
    if (command[0] == "DBSIZE")
      return S::Reply{S::integer(3)};
    if (command[0] == "SCAN")
      return S::Reply{S::array({S::bulk("7"), S::array({})})};
    return S::Reply{S::status("OK")};
  });
  test::TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  auto pull = run_cli({"remote", "pull", "--json"}, {{"JITCACHE_DIR", dir.path().string()},
                                                     {"JITCACHE_REMOTE", server.url()},
                                                     {"JITCACHE_REMOTE_KEY", "k"}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(pull.exit_code, 1) << pull.out << pull.err;
  EXPECT_NE(pull.out.find("SCAN"), std::string::npos) << pull.out;
}

} // namespace
} // namespace jitcache
