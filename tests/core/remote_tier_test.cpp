// The remote tier against a real redis-server on loopback: remote hits and backfill, read-only
// and unsigned remotes, refused and oversized entries, a server that dies or stalls; and against
// a loopback server that is not Redis, for what a real one cannot be made to do (trickle its
// answer, answer without end).
#include <jitcache/cache.hpp>

#include "core/tiers/entry_codec.hpp"
#include "core/tiers/remote/remote_lease.hpp"
#include "core/tiers/remote/remote_seal.hpp"
#include "core/tiers/remote/remote_store.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/fake_clock.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/samples.hpp"
#include "tests/support/scripted_redis.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <future>
#include <stdexcept>
#include <thread>

namespace jitcache {

using detail::encode_entry;
using detail::parse_redis_url;
using detail::RedisConnection;
using detail::RedisReply;
using detail::RedisUrl;
using detail::RemoteLease;
using detail::RemoteStore;
using detail::seal;
namespace {
using test::key_for;

constexpr char k_secret[] = "fleet secret";

// What someone who can write to the server but does not hold the fleet's key plants: an entry
// for `key` (the same request, another binary) sealed unsigned.
std::string forged(const Key& key, const std::string& binary = "EVIL") {
  Entry entry{"opencl", binary, {}, 0};
  entry.key_fields = key.stored_fields;
  return seal(key.digest, encode_entry(key.digest, entry), "");
}

// A server on a loopback port that accepts one connection, reads the first command and answers
// with what `answer` sends on the socket.
class FakeServer {
public:
  explicit FakeServer(std::function<void(int)> answer) {
    m_listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (::bind(m_listener, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        ::listen(m_listener, 1) != 0 ||
        ::getsockname(m_listener, reinterpret_cast<sockaddr*>(&address), &size) != 0)
      throw std::runtime_error("cannot listen on loopback");
    m_port = ntohs(address.sin_port);
    m_thread = std::thread([this, answer] {
      const int fd = ::accept(m_listener, nullptr, nullptr);
      if (fd < 0)
        return;
      char command[4096];
      if (::recv(fd, command, sizeof command, 0) > 0)
        answer(fd);
      ::close(fd);
    });
  }
  ~FakeServer() {
    ::shutdown(m_listener, SHUT_RDWR); // wakes an accept() that nothing connected to
    m_thread.join();
    ::close(m_listener);
  }
  std::string url(const std::string& query) const {
    return "redis://127.0.0.1:" + std::to_string(m_port) + query;
  }

private:
  int m_listener = -1;
  int m_port = 0;
  std::thread m_thread;
};

TEST(RemoteConnectionTest, AServerThatTricklesItsAnswerIsCutOffAtTheDeadline) {
  // Each byte comes well within the timeout; the whole answer never does.
  FakeServer server([](int fd) {
    for (char c : std::string("+PONG\r\n")) {
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
      if (::send(fd, &c, 1, MSG_NOSIGNAL) != 1)
        return;
    }
  });
  RemoteStore store(*parse_redis_url(server.url("?timeout_ms=100")), "");
  auto pong = store.ping();
  ASSERT_FALSE(pong);
  EXPECT_EQ(pong.error().code, ErrorCode::io_error);
  EXPECT_NE(pong.error().message.find("no answer within 100 ms"), std::string::npos)
      << pong.error().message;
}

TEST(RemoteConnectionTest, AnAnswerWithoutEndIsCutOffAtTheReplyLimit) {
  FakeServer server([](int fd) {
    const std::string header = "$1000000000\r\n";
    if (::send(fd, header.data(), header.size(), MSG_NOSIGNAL) < 0)
      return;
    const std::string zeros(1 << 16, '0');
    while (::send(fd, zeros.data(), zeros.size(), MSG_NOSIGNAL) > 0) {
    }
  });
  // A timeout long enough that the limit, not the deadline, ends it.
  const RedisUrl url = *parse_redis_url(server.url("?timeout_ms=5000&max_bytes=100000"));
  RemoteStore store(url, "");
  auto answer = store.run({"GET", "x"});
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, ErrorCode::io_error);
  const std::string limit = std::to_string(RedisConnection::reply_limit(url));
  EXPECT_NE(answer.error().message.find("answered GET with more than " + limit + " bytes"),
            std::string::npos)
      << answer.error().message;
}

class RemoteTierTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!test::RedisServer::available())
      GTEST_SKIP() << "redis-server is not installed";
    server.start();
  }

  // A process on a host of its own: its own user tier, the shared remote.
  Config host(const test::TempDir& dir, const std::string& query = "",
              const char* secret = k_secret) {
    std::map<std::string, std::string> variables = {{"JITCACHE_DIR", dir.path().string()},
                                                    {"JITCACHE_REMOTE", server.url(query)}};
    if (secret)
      variables.emplace("JITCACHE_REMOTE_KEY", secret);
    Config config = Config::from_variables(variables);
    // Without a key, a URL that does not say unsigned=1 is not used, with a warning.
    if (secret || query.find("unsigned=1") != std::string::npos) {
      EXPECT_TRUE(config.warnings.empty());
    }
    return config;
  }

  // Builds `key` once in a fresh cache of `config`; says how, with the session's counters.
  struct Built {
    BuildInfo info;
    Stats stats;
    std::string payload;
  };
  Built build(const Config& config, const Key& key, const std::string& binary = "BINARY") {
    Built out;
    {
      Cache cache(config);
      auto found = cache.get_or_compile(
          key,
          [&]() -> Expected<Entry> {
            ++compiles;
            return Entry{"", binary, {}, 5000000};
          },
          &out.info);
      EXPECT_TRUE(found) << found.error().message;
      if (found)
        out.payload = found->entry.payload;
      cache.flush();
      out.stats = cache.session_stats();
    }
    return out;
  }

  // A raw connection to the server, for what a test does to it behind jitcache's back.
  RemoteStore raw(const std::string& secret = "") {
    return RemoteStore(*parse_redis_url(server.url("?unsigned=1")), secret);
  }
  std::string value_of(const Key& key) {
    RemoteStore store = raw();
    auto reply = store.run({"GET", store.redis_key(key.digest.hex())});
    EXPECT_TRUE(reply && reply->kind == RedisReply::Kind::string);
    return reply ? reply->text : "";
  }
  void set_value(const Key& key, const std::string& value) {
    RemoteStore store = raw();
    ASSERT_TRUE(store.run({"SET", store.redis_key(key.digest.hex()), value}));
  }
  long long entries_on_server() {
    RemoteStore store = raw();
    auto reply = store.run({"DBSIZE"});
    return reply ? reply->integer : -1;
  }

  test::RedisServer server;
  std::atomic<int> compiles{0};
};

TEST_F(RemoteTierTest, AnotherHostHitsTheRemoteThenItsOwnUserTier) {
  test::TempDir a, b;
  const Key key = key_for("kernel");
  Built first = build(host(a), key);
  EXPECT_EQ(first.info.tier, "compile");
  EXPECT_EQ(first.stats.get("opencl", Counter::remote_writes), 1u);
  EXPECT_EQ(entries_on_server(), 1);

  Built second = build(host(b), key);
  EXPECT_EQ(second.info.outcome, Outcome::hit);
  EXPECT_EQ(second.info.tier, "remote");
  EXPECT_EQ(second.payload, "BINARY");
  EXPECT_EQ(second.stats.hits("opencl", "remote"), 1u);
  EXPECT_GT(second.stats.get("opencl", Counter::saved_ns), 0u); // the compile's time, kept

  Built third = build(host(b), key); // backfilled: no remote needed any more
  EXPECT_EQ(third.info.tier, "user");
  EXPECT_EQ(compiles, 1);
}

TEST_F(RemoteTierTest, SeveralRemotesAreWrittenToAllAndReadInOrderPastOnesThatFail) {
  test::RedisServer second;
  second.start();
  const auto fleet = [&](const test::TempDir& dir) {
    return Config::from_variables({{"JITCACHE_DIR", dir.path().string()},
                                   {"JITCACHE_REMOTE", server.url() + "," + second.url()},
                                   {"JITCACHE_REMOTE_KEY", k_secret}});
  };
  const Key key = key_for("two remotes");
  test::TempDir a, b, c;
  Built first = build(fleet(a), key);
  EXPECT_EQ(first.stats.get("opencl", Counter::remote_writes), 2u);
  EXPECT_FALSE(value_of(key).empty());
  RemoteStore other(*parse_redis_url(second.url("?unsigned=1")), "");
  auto copy = other.run({"GET", other.redis_key(key.digest.hex())});
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->text, value_of(key)); // the same signed value on both

  server.stop(); // the first is gone: the second serves
  Built second_served = build(fleet(b), key);
  EXPECT_EQ(second_served.info.tier, "remote");
  EXPECT_EQ(second_served.payload, "BINARY");
  EXPECT_EQ(second_served.stats.get("all", Counter::remote_down), 1u);

  server.start(); // back, and empty: a miss there, then the second serves
  Built after_restart = build(fleet(c), key);
  EXPECT_EQ(after_restart.info.tier, "remote");
  EXPECT_EQ(after_restart.stats.get("all", Counter::remote_down), 0u);
  EXPECT_EQ(compiles, 1);
}

TEST_F(RemoteTierTest, WithoutAKeyTheRemoteIsReadOnlyUnlessTheUrlSaysUnsigned) {
  test::TempDir a, b, c, d;
  const Key key = key_for("unsigned");
  Built keyless = build(host(a, "", nullptr), key);
  EXPECT_EQ(keyless.stats.get("opencl", Counter::remote_writes), 0u);
  EXPECT_EQ(entries_on_server(), 0);

  Built readonly = build(host(b, "?readonly=1"), key);
  EXPECT_EQ(readonly.stats.get("opencl", Counter::remote_writes), 0u);
  EXPECT_EQ(entries_on_server(), 0);

  Built opted_in = build(host(c, "?unsigned=1", nullptr), key);
  EXPECT_EQ(opted_in.stats.get("opencl", Counter::remote_writes), 1u);
  // No key, and no unsigned=1: the server is not trusted, so the remote is not read at all.
  const Config untrusting = host(d, "", nullptr);
  EXPECT_TRUE(untrusting.remote.empty());
  ASSERT_EQ(untrusting.warnings.size(), 1u);
  EXPECT_NE(untrusting.warnings[0].find("unsigned=1"), std::string::npos) << untrusting.warnings[0];
  Built reader = build(untrusting, key);
  EXPECT_EQ(reader.info.tier, "compile");
  test::TempDir e;
  Built trusting = build(host(e, "?unsigned=1", nullptr), key); // opted in: the server is trusted
  EXPECT_EQ(trusting.info.tier, "remote");
  EXPECT_EQ(compiles, 4);
}

TEST_F(RemoteTierTest, EntriesOverTheLimitAreNotSent) {
  test::TempDir a;
  Built built = build(host(a, "?max_bytes=64"), key_for("large"), std::string(1000, 'x'));
  EXPECT_EQ(built.info.tier, "compile");
  EXPECT_EQ(built.stats.get("opencl", Counter::remote_writes), 0u);
  EXPECT_EQ(built.stats.get("opencl", Counter::store_errors), 0u);
  EXPECT_EQ(entries_on_server(), 0);
}

// Another host, with a larger max_bytes, stored a value this host would not send: it is not
// downloaded (at most max_bytes of it crosses the network), and the remote stays in use.
TEST_F(RemoteTierTest, AValueLargerThanMaxBytesIsAMissAndTheRemoteStaysUp) {
  const Key key = key_for("huge");
  test::TempDir writer, reader;
  build(host(writer), key, std::string(300000, 'h'));
  ASSERT_GT(value_of(key).size(), 300000u);
  Built built = build(host(reader, "?max_bytes=100000"), key, "SMALL");
  EXPECT_EQ(built.info.tier, "compile");
  EXPECT_EQ(built.payload, "SMALL");
  EXPECT_EQ(built.stats.get("opencl", Counter::corrupt), 0u);
  EXPECT_EQ(built.stats.get("opencl", Counter::remote_refused), 0u);
  EXPECT_EQ(built.stats.get("all", Counter::remote_down), 0u);
  EXPECT_EQ(built.stats.get("opencl", Counter::remote_writes), 1u); // sent over it
  EXPECT_EQ(compiles, 2);
}

TEST_F(RemoteTierTest, EntriesNotSignedWithTheKeyForTheirNameAreRefusedAndCounted) {
  const Key key = key_for("signed"), other = key_for("another kernel");
  test::TempDir writer;
  build(host(writer), key);
  const std::string good = value_of(key);
  const std::string entry = encode_entry(key.digest, Entry{"opencl", "EVIL", {}, 0});

  std::string poisoned = good;
  poisoned.back() ^= 1;
  const std::pair<const char*, std::pair<const Key*, std::string>> cases[] = {
      {"bytes changed", {&key, poisoned}},
      {"unsigned", {&key, seal(key.digest, entry, "")}},
      {"another key signed it", {&key, seal(key.digest, entry, "not the fleet's")}},
      {"copied to another key's name", {&other, good}},
  };
  for (const auto& [what, target] : cases) {
    set_value(*target.first, target.second);
    test::TempDir reader;
    const int before = compiles;
    Built built = build(host(reader), *target.first, "OWN");
    EXPECT_EQ(built.info.tier, "compile") << what;
    EXPECT_EQ(built.payload, "OWN") << what;
    EXPECT_EQ(compiles, before + 1) << what;
    EXPECT_EQ(built.stats.get("opencl", Counter::remote_refused), 1u) << what;
    EXPECT_EQ(built.stats.hits("opencl"), 0u) << what;
  }
}

TEST_F(RemoteTierTest, GarbageIsCountedCorruptLikeADamagedLocalEntry) {
  const Key key = key_for("garbage");
  set_value(key, "not an entry at all");
  test::TempDir reader;
  Built built = build(host(reader, "?unsigned=1", nullptr), key);
  EXPECT_EQ(built.info.tier, "compile");
  EXPECT_EQ(built.stats.get("opencl", Counter::corrupt), 1u);
  EXPECT_EQ(built.stats.get("opencl", Counter::remote_refused), 0u);

  // Unsigned and trusted, but the entry inside was made for another key.
  const Key other = key_for("other");
  set_value(key, seal(key.digest, encode_entry(other.digest, Entry{"opencl", "X", {}, 0}), ""));
  test::TempDir reader2;
  built = build(host(reader2, "?unsigned=1", nullptr), key);
  EXPECT_EQ(built.info.tier, "compile");
  EXPECT_EQ(built.stats.get("opencl", Counter::corrupt), 1u);
}

TEST_F(RemoteTierTest, AServerThatDiesIsLeftAloneForItsBackOffThenUsedAgain) {
  test::TempDir dir;
  const Config config = host(dir, "?backoff_ms=300");
  test::FakeClock clock; // the back-off passes when the test says, however slow the run
  Cache cache(config);
  const auto get = [&](const std::string& source) {
    BuildInfo info;
    auto found = cache.get_or_compile(
        key_for(source),
        [&]() -> Expected<Entry> {
          return Entry{"", "B", {}, 0};
        },
        &info);
    EXPECT_TRUE(found) << source;
    cache.flush();
    return info;
  };
  get("before");
  EXPECT_EQ(cache.session_stats().get("opencl", Counter::remote_writes), 1u);
  server.stop();
  EXPECT_EQ(get("while down").tier, "compile");
  EXPECT_EQ(get("still down").tier, "compile");
  EXPECT_EQ(cache.session_stats().get("all", Counter::remote_down), 1u);
  server.start();
  clock.advance(std::chrono::milliseconds(299));
  EXPECT_EQ(get("still down, at the back-off's end").tier, "compile");
  clock.advance(std::chrono::milliseconds(1)); // past the back-off
  get("after");
  const Stats stats = cache.session_stats();
  EXPECT_EQ(stats.get("all", Counter::remote_down), 1u);
  EXPECT_EQ(stats.get("opencl", Counter::remote_writes), 2u);
  EXPECT_EQ(stats.get("opencl", Counter::misses), 5u);
}

TEST_F(RemoteTierTest, AStalledServerCostsOneTimeoutNotItsStall) {
  // DEBUG SLEEP stalls the whole server; sent on a socket of its own, its reply never read.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(server.port()));
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const std::string stall = "DEBUG SLEEP 5\r\n";
  ASSERT_EQ(::write(fd, stall.data(), stall.size()), static_cast<ssize_t>(stall.size()));
  // Stalled once a PING goes unanswered.
  bool answered = true;
  for (int attempt = 0; answered && attempt < 100; ++attempt) {
    RemoteStore probe(*parse_redis_url(server.url("?timeout_ms=50")), "");
    answered = static_cast<bool>(probe.ping());
  }
  ASSERT_FALSE(answered) << "DEBUG SLEEP did not stall the server";
  test::TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  Built built = build(host(dir, "?timeout_ms=100"), key_for("stalled"));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(built.info.tier, "compile");
  EXPECT_EQ(built.stats.get("all", Counter::remote_down), 1u);
  // A generous bound: the stall is 5 s, the timeout 0.1 s.
  EXPECT_LT(took, std::chrono::milliseconds(3500));
  ::close(fd);
}

TEST_F(RemoteTierTest, TwoHostsCompileOnceAndTheOtherReadsTheRemote) {
  test::TempDir a, b;
  const Key key = key_for("fleet");
  // The compile goes on once the other host has paused to wait for the fleet's lease (the only
  // wait there is: each host has a cache directory of its own).
  std::promise<void> waiting;
  const std::shared_future<void> other_waits = waiting.get_future().share();
  test::ReportingClock clock([&] { waiting.set_value(); });
  std::atomic<int> started{0};
  std::vector<BuildInfo> infos(2);
  const auto host_build = [&](const test::TempDir& dir, BuildInfo& info) {
    Cache cache(host(dir));
    ++started;
    while (started < 2)
      std::this_thread::yield();
    auto found = cache.get_or_compile(
        key,
        [&]() -> Expected<Entry> {
          ++compiles;
          EXPECT_EQ(other_waits.wait_for(std::chrono::minutes(1)), std::future_status::ready);
          return Entry{"", "ONCE", {}, 0};
        },
        &info);
    EXPECT_TRUE(found);
    EXPECT_EQ(found->entry.payload, "ONCE");
  };
  std::thread first(host_build, std::cref(a), std::ref(infos[0]));
  std::thread second(host_build, std::cref(b), std::ref(infos[1]));
  first.join();
  second.join();
  EXPECT_EQ(compiles, 1);
  const bool first_compiled = infos[0].outcome == Outcome::miss;
  EXPECT_EQ(infos[first_compiled ? 1 : 0].tier, "remote");
  EXPECT_EQ(value_of(key).empty(), false);
  RemoteStore store = raw();
  auto lease = store.run({"EXISTS", store.redis_key("lease:" + key.digest.hex())});
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->integer, 0); // let go once stored
}

// A bad value on the server (here: unsigned) does not make the fleet compile one host after
// another: the host that waits for the lease holder asks again and loads the holder's entry.
TEST_F(RemoteTierTest, ABadValueOnTheServerStillMeansOneCompileForTheFleet) {
  test::TempDir a, b;
  const Key key = key_for("planted");
  set_value(key, seal(key.digest, encode_entry(key.digest, Entry{"opencl", "EVIL", {}, 0}), ""));
  // The compile goes on once the other host has paused to wait for the fleet's lease (the only
  // wait there is: each host has a cache directory of its own).
  std::promise<void> waiting;
  const std::shared_future<void> other_waits = waiting.get_future().share();
  test::ReportingClock clock([&] { waiting.set_value(); });
  std::atomic<int> started{0};
  std::vector<Built> built(2);
  const auto host_build = [&](const test::TempDir& dir, Built& out) {
    Cache cache(host(dir));
    ++started;
    while (started < 2)
      std::this_thread::yield();
    auto found = cache.get_or_compile(
        key,
        [&]() -> Expected<Entry> {
          ++compiles;
          EXPECT_EQ(other_waits.wait_for(std::chrono::minutes(1)), std::future_status::ready);
          return Entry{"", "GOOD", {}, 0};
        },
        &out.info);
    ASSERT_TRUE(found) << found.error().message;
    out.payload = found->entry.payload;
    cache.flush();
    out.stats = cache.session_stats();
  };
  std::thread first(host_build, std::cref(a), std::ref(built[0]));
  std::thread second(host_build, std::cref(b), std::ref(built[1]));
  first.join();
  second.join();
  EXPECT_EQ(compiles, 1);
  for (const Built& one : built) {
    EXPECT_EQ(one.payload, "GOOD");
    EXPECT_EQ(one.stats.get("opencl", Counter::remote_refused), 1u) << "once per request";
  }
  const bool first_compiled = built[0].info.outcome == Outcome::miss;
  EXPECT_EQ(built[first_compiled ? 1 : 0].info.tier, "remote");
}

// A child of a process that has talked to the remote talks on connections of its own: parent
// and child at once each get their own replies.
TEST_F(RemoteTierTest, AForkedChildDoesNotShareItsParentsConnections) {
  RemoteStore store = raw();
  ASSERT_TRUE(store.run({"SET", "parent", "P"}));
  ASSERT_TRUE(store.run({"SET", "child", "C"})); // leaves a connection in the pool
  const auto hammer = [&](const char* name, const char* value) {
    int wrong = 0;
    for (int i = 0; i < 2000; ++i) {
      auto reply = store.run({"GET", name});
      wrong += !reply || reply->text != value;
    }
    return wrong;
  };
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0)
    ::_exit(hammer("child", "C") == 0 ? 0 : 1);
  EXPECT_EQ(hammer("parent", "P"), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST_F(RemoteTierTest, AWaiterTakesOverFromAHolderThatWasKilled) {
  test::TempDir a, b;
  const Key key = key_for("killed");
  const std::string query = "?lease_ms=600";
  test::ChildProcess holder([&] {
    Cache cache(host(a, query));
    auto found = cache.get_or_compile(key, []() -> Expected<Entry> {
      test::ChildProcess::tell_parent("compiling");
      ::pause(); // until killed
      return Entry{"", "NEVER", {}, 0};
    });
    return found ? 0 : 1;
  });
  ASSERT_EQ(holder.next_message(), "compiling");
  std::atomic<bool> killed{false};
  std::atomic<bool> compiled_after_kill{false};
  BuildInfo info;
  std::promise<void> waiting;
  test::ReportingClock clock([&] { waiting.set_value(); });
  std::thread waiter([&] {
    Cache cache(host(b, query));
    auto found = cache.get_or_compile(
        key,
        [&]() -> Expected<Entry> {
          ++compiles;
          compiled_after_kill = killed.load();
          return Entry{"", "MINE", {}, 0};
        },
        &info);
    EXPECT_TRUE(found);
  });
  waiting.get_future().wait(); // the waiter found the lease held
  killed = true;
  holder.kill(SIGKILL);
  holder.wait();
  waiter.join();
  EXPECT_EQ(compiles, 1);
  EXPECT_TRUE(compiled_after_kill); // it waited for the holder, then took over
  EXPECT_EQ(info.outcome, Outcome::miss);
}

// A key that was asked for and cannot be used fails closed: the remote tiers are off (one
// warning), never read trusting the server. A forged unsigned entry planted on the server is
// neither served nor copied into the user tier, with or without unsigned=1 in the URL.
TEST_F(RemoteTierTest, AKeyAskedForThatCannotBeUsedTurnsTheRemoteTiersOff) {
  const Key key = key_for("forged");
  set_value(key, forged(key));
  test::TempDir keys;
  const auto key_file = [&](const std::string& name, mode_t mode, uid_t owner) {
    const std::filesystem::path path = keys.path() / name;
    std::ofstream(path) << "fleet secret\n";
    ::chmod(path.c_str(), mode);
    EXPECT_EQ(::chown(path.c_str(), owner, static_cast<gid_t>(-1)), 0);
    return path.string();
  };
  const std::string fifo = (keys.path() / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string empty_file = key_file("empty", 0600, ::geteuid());
  std::ofstream(empty_file, std::ios::trunc).flush();
  std::vector<std::pair<std::string, std::string>> cases = {
      {"JITCACHE_REMOTE_KEY", ""},
      {"JITCACHE_REMOTE_KEY_FILE", ""},
      {"JITCACHE_REMOTE_KEY_FILE", key_file("readable", 0644, ::geteuid())},
      {"JITCACHE_REMOTE_KEY_FILE", fifo},
      {"JITCACHE_REMOTE_KEY_FILE", (keys.path() / "missing").string()},
      {"JITCACHE_REMOTE_KEY_FILE", empty_file},
  };
  if (::geteuid() == 0) // only root can give a file to another user
    cases.emplace_back("JITCACHE_REMOTE_KEY_FILE", key_file("theirs", 0600, 65534));
  for (const auto& [name, value] : cases) {
    for (const std::string query : {"", "?unsigned=1"}) {
      const std::string what = name + "='" + value + "' " + query;
      test::TempDir dir;
      const Config config = Config::from_variables({{"JITCACHE_DIR", dir.path().string()},
                                                    {"JITCACHE_REMOTE", server.url(query)},
                                                    {name, value}});
      EXPECT_TRUE(config.remote.empty()) << what;
      EXPECT_TRUE(config.remote_key.empty()) << what;
      ASSERT_EQ(config.warnings.size(), 1u) << what;
      EXPECT_NE(config.warnings[0].find(name), std::string::npos) << config.warnings[0];
      EXPECT_NE(config.warnings[0].find("remote tiers are off"), std::string::npos)
          << config.warnings[0];
      const int before = compiles;
      Built first = build(config, key, "OWN");
      EXPECT_EQ(first.payload, "OWN") << what;
      EXPECT_EQ(first.info.tier, "compile") << what;
      Built second = build(config, key, "OWN"); // the user tier holds what was compiled
      EXPECT_EQ(second.payload, "OWN") << what;
      EXPECT_EQ(second.info.tier, "user") << what;
      EXPECT_EQ(compiles, before + 1) << what;
    }
  }
  EXPECT_EQ(value_of(key), forged(key)); // nothing was written over it either
}

// Someone who can write to the server plants a lease for a key: without expiry, with one far
// longer than any lease, or with a long one that is never renewed. None of them is waited for
// past a bound (before: each stalled the miss for two minutes).
TEST_F(RemoteTierTest, APlantedLeaseThatIsNotRenewedIsNotWaitedFor) {
  const Key key = key_for("planted lease");
  RemoteStore store = raw();
  const std::string lease = store.redis_key("lease:" + key.digest.hex());
  const std::vector<std::vector<std::string>> plants = {
      {"SET", lease, "planted"},                       // no expiry: not a lease
      {"SET", lease, "planted", "PX", "900000000000"}, // longer than any lease
      {"SET", lease, "planted", "PX", "3600000"},      // a lease, never renewed
  };
  for (const auto& plant : plants) {
    const std::string what = plant.size() > 3 ? "PX " + plant[4] : "no expiry";
    ASSERT_TRUE(store.run({plant.begin(), plant.end()}));
    auto remote =
        std::make_shared<RemoteStore>(*parse_redis_url(server.url("?lease_ms=300")), k_secret);
    RemoteLease::Options options;
    options.max_wait = std::chrono::seconds(30); // what the bug waits (120 s by default)
    const auto start = std::chrono::steady_clock::now();
    auto acquired = RemoteLease::acquire(
        remote, key.digest, [] { return false; }, options);
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(acquired) << what;
    EXPECT_EQ(acquired.error().code, ErrorCode::unsupported) << what;
    // A bound that cannot flake: the fix waits at most one lease (0.3 s), the bug 30 s.
    EXPECT_LT(took, std::chrono::seconds(20)) << what;
  }
  // Through a build with every default (a lease of 10 s, the default wait): a lease without
  // expiry is a miss and a compile, not a stall.
  ASSERT_TRUE(store.run({"SET", lease, "planted"}));
  test::TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  Built built = build(host(dir), key, "OWN");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(built.info.tier, "compile");
  EXPECT_EQ(built.payload, "OWN");
}

// A holder that keeps renewing is waited for, but not for ever: three lease periods at most.
TEST_F(RemoteTierTest, AHolderThatKeepsRenewingIsWaitedForAtMostThreeLeases) {
  const Key key = key_for("slow holder");
  auto holder_store =
      std::make_shared<RemoteStore>(*parse_redis_url(server.url("?lease_ms=200")), k_secret);
  auto held = RemoteLease::acquire(holder_store, key.digest, [] { return false; }, {});
  ASSERT_TRUE(held && *held);
  auto waiter_store =
      std::make_shared<RemoteStore>(*parse_redis_url(server.url("?lease_ms=200")), k_secret);
  const auto start = std::chrono::steady_clock::now();
  auto waited = RemoteLease::acquire(waiter_store, key.digest, [] { return false; }, {});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().code, ErrorCode::unsupported);
  EXPECT_GE(took, std::chrono::milliseconds(600)); // it did wait for a live holder
  EXPECT_LT(took, std::chrono::seconds(20));
}

// A prefix is a name, not a pattern: `x*y:` lists only keys that start with it (before: `xy:`
// matched the glob, was shorter than the prefix, and the listing threw).
TEST_F(RemoteTierTest, APrefixWithGlobCharactersListsOnlyItsOwnKeys) {
  const Key key = key_for("globbed");
  test::TempDir writer;
  build(host(writer, "?prefix=x*y%5B%5D%3F%5C:"), key); // x*y[]?\:
  RemoteStore store = raw();
  for (const char* other : {"xy:", "x", "xAy[]?\\:",
                            "xAy[]?\\:"
                            "0123",
                            "x*y[]?\\"})
    ASSERT_TRUE(store.run({"SET", other, "not ours"}));
  RemoteStore reader(*parse_redis_url(server.url("?prefix=x*y%5B%5D%3F%5C:")), k_secret);
  std::vector<Store::Item> items;
  auto listed = reader.for_each([&](const Store::Item& item) { items.push_back(item); });
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].key, key.digest);
  EXPECT_TRUE(items[0].valid);
}

// A server whose SCAN cursor never comes back to 0: the listing ends with an error, bounded by
// what DBSIZE says the database holds (before: it went on for ever).
TEST(RemoteScanTest, ACursorThatNeverEndsIsCutOff) {
  std::atomic<int> scans{0};
  test::ScriptedRedis server([&](const std::vector<std::string>& command) {
    using S = test::ScriptedRedis;
    if (command[0] == "DBSIZE")
      return S::Reply{S::integer(5)};
    if (command[0] == "SCAN") {
      ++scans;
      return S::Reply{S::array({S::bulk(std::to_string(scans + 1)), S::array({})})};
    }
    return S::Reply{S::error("ERR unknown command")};
  });
  RemoteStore store(*parse_redis_url(server.url()), k_secret);
  auto listed = store.for_each([](const Store::Item&) {});
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().code, ErrorCode::io_error);
  EXPECT_NE(listed.error().message.find("SCAN"), std::string::npos) << listed.error().message;
  EXPECT_LE(scans, 1000);
}

// max_bytes near 2^64 must not wrap: every entry would be "larger than max_bytes".
TEST_F(RemoteTierTest, AMaxBytesNearTheTopOfItsRangeDoesNotWrap) {
  const Key key = key_for("wide limit");
  test::TempDir writer;
  build(host(writer), key);
  RedisUrl url = *parse_redis_url(server.url());
  url.max_bytes = UINT64_MAX - 10;
  RemoteStore reader(url, k_secret);
  auto entry = reader.get(key.digest);
  ASSERT_TRUE(entry) << entry.error().message;
  ASSERT_TRUE(*entry);
  EXPECT_EQ((*entry)->payload, "BINARY");
  EXPECT_TRUE(reader.fits(1000));
}

} // namespace
} // namespace jitcache
