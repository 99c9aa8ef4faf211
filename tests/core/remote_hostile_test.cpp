// Every reply a remote can send: a loopback server (tests/support/scripted_redis) answers
// jitcache's commands as a small Redis would, except that each command may get, at random, a
// reply of one hostile kind (wrong types, huge or negative lengths, truncated, nested, garbage,
// endless SCAN cursors, silence, a closed connection, forged values, the command said back).
// Each trial builds a kernel through a Cache with that remote, lists the remote (as `jitcache
// remote pull` does) and pings it. Nothing may crash or hang past the URL's timeouts, nothing
// but the trial's own compile may be served or copied into the user tier, the tier is marked
// down when the server fails, and no secret (the key, the password) reaches a log line or a file
// jitcache writes.
//
// JITCACHE_HOSTILE_TRIALS sets the trials per kind (default 200); JITCACHE_HOSTILE_SEED the
// seed (printed; a failure names its kind and trial).
#include <jitcache/cache.hpp>

#include "core/tiers/entry_codec.hpp"
#include "core/tiers/remote/remote_seal.hpp"
#include "core/tiers/remote/remote_store.hpp"
#include "tests/support/hostile_trials.hpp"
#include "tests/support/samples.hpp"
#include "tests/support/scripted_redis.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

namespace jitcache {

using detail::encode_entry;
using detail::parse_redis_url;
using detail::RemoteStore;
using detail::seal;
namespace {
using test::key_for;

using S = test::ScriptedRedis;

constexpr char k_key[] = "hostile-test-KEY-7f3a9c";
constexpr char k_password[] = "hostile-test-PASSWORD-51be";

enum class Hostile {
  wrong_type,
  huge_length,
  negative_length,
  truncated,
  nested,
  garbage,
  endless_scan,
  silent,
  closed,
  forged,
  echo,
};
constexpr Hostile k_kinds[] = {
    Hostile::wrong_type,   Hostile::huge_length, Hostile::negative_length,
    Hostile::truncated,    Hostile::nested,      Hostile::garbage,
    Hostile::endless_scan, Hostile::silent,      Hostile::closed,
    Hostile::forged,       Hostile::echo};

const char* name_of(Hostile kind) {
  static const char* const names[] = {
      "wrong_type",   "huge_length", "negative_length", "truncated", "nested", "garbage",
      "endless_scan", "silent",      "closed",          "forged",    "echo"};
  return names[static_cast<int>(kind)];
}

// A server that keeps values as Redis does, for the commands jitcache sends, and lets a hostile
// kind answer instead. Thread-safe: connections are served on threads of their own.
class HostileModel {
public:
  HostileModel(Hostile kind, std::uint64_t seed, const Key& key)
      : m_kind(kind), m_random(seed), m_key(key) {}

  S::Reply answer(const std::vector<std::string>& command) {
    std::lock_guard<std::mutex> lock(m_mutex);
    const std::string sane = this->sane(command);
    if (!hostile_now(command))
      return S::Reply{sane};
    return hostile(command, sane);
  }

private:
  std::uint64_t pick(std::uint64_t n) {
    return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(m_random);
  }
  std::string random_bytes(std::size_t n) {
    std::string out(n, '\0');
    for (char& c : out)
      c = static_cast<char>(pick(256));
    return out;
  }

  bool hostile_now(const std::vector<std::string>& command) {
    switch (m_kind) {
    case Hostile::silent:
    case Hostile::closed:
      return true; // every command: the tier must be marked down
    case Hostile::endless_scan:
      return command[0] == "SCAN" || command[0] == "DBSIZE";
    case Hostile::forged:
      return command[0] == "GETRANGE" || command[0] == "GET";
    default:
      return pick(2) == 0;
    }
  }

  std::string sane(const std::vector<std::string>& c) {
    const auto arg = [&](std::size_t i) { return i < c.size() ? c[i] : std::string(); };
    const std::string& name = c[0];
    if (name == "AUTH" || name == "SELECT")
      return S::status("OK");
    if (name == "PING")
      return S::status("PONG");
    if (name == "DBSIZE")
      return S::integer(static_cast<long long>(m_data.size()));
    if (name == "GET") {
      auto it = m_data.find(arg(1));
      return it == m_data.end() ? S::nil() : S::bulk(it->second);
    }
    if (name == "GETRANGE") {
      auto it = m_data.find(arg(1));
      const std::size_t last = std::strtoull(arg(3).c_str(), nullptr, 10);
      return S::bulk(it == m_data.end() ? "" : it->second.substr(0, last + 1));
    }
    if (name == "SET") {
      bool nx = false;
      long long ttl = -1;
      for (std::size_t i = 3; i < c.size(); ++i) {
        nx = nx || c[i] == "NX";
        if (c[i] == "PX" && i + 1 < c.size())
          ttl = std::atoll(c[i + 1].c_str());
      }
      if (nx && m_data.count(arg(1)))
        return S::nil();
      m_data[arg(1)] = arg(2);
      m_ttl[arg(1)] = ttl;
      return S::status("OK");
    }
    if (name == "PTTL")
      return S::integer(m_data.count(arg(1)) ? m_ttl[arg(1)] : -2);
    if (name == "DEL") {
      const bool had = m_data.erase(arg(1)) > 0;
      return S::integer(had ? 1 : 0);
    }
    if (name == "EVAL") { // the lease's renew (with a time) and release scripts
      auto it = m_data.find(arg(3));
      if (it == m_data.end() || it->second != arg(4))
        return S::integer(0);
      if (c.size() > 5)
        m_ttl[arg(3)] = std::atoll(arg(5).c_str());
      else
        m_data.erase(it);
      return S::integer(1);
    }
    if (name == "SCAN") {
      std::vector<std::string> names;
      for (const auto& [name, value] : m_data)
        names.push_back(S::bulk(name));
      return S::array({S::bulk("0"), S::array(names)});
    }
    return S::error("ERR unknown command '" + name + "'");
  }

  // A reply of one of the kinds every command may get.
  std::string typed() {
    switch (pick(7)) {
    case 0:
      return S::status(pick(2) ? "OK" : "QUEUED");
    case 1:
      return S::error("ERR " + std::to_string(pick(1000)));
    case 2:
      return S::integer(static_cast<long long>(m_random()));
    case 3:
      return S::bulk(random_bytes(pick(64)));
    case 4:
      return S::nil();
    case 5:
      return "*-1\r\n";
    default: {
      std::vector<std::string> items;
      for (std::uint64_t i = pick(4); i > 0; --i)
        items.push_back(pick(2) ? S::bulk(random_bytes(pick(16))) : S::integer(pick(100)));
      return S::array(items);
    }
    }
  }

  S::Reply hostile(const std::vector<std::string>& command, const std::string& sane) {
    S::Reply reply;
    switch (m_kind) {
    case Hostile::wrong_type:
      reply.bytes = typed();
      break;
    case Hostile::huge_length: {
      static const char* const huge[] = {"2147483648",          "4294967296",
                                         "9223372036854775807", "99999999999999999999",
                                         "1073741824",          "17179869184"};
      reply.bytes = std::string(pick(2) ? "$" : "*") + huge[pick(std::size(huge))] + "\r\n" +
                    random_bytes(pick(4096));
      (pick(2) ? reply.close : reply.stall) = true;
      break;
    }
    case Hostile::negative_length: {
      static const char* const negative[] = {"-2", "-100", "-9223372036854775808", "-1"};
      const std::string length = negative[pick(std::size(negative))];
      const std::string inner = std::string(pick(2) ? "$" : "*") + length + "\r\n";
      reply.bytes = pick(2) ? inner : "*2\r\n" + inner + S::bulk("x");
      break;
    }
    case Hostile::truncated:
      reply.bytes = sane.substr(0, pick(sane.size()));
      (pick(2) ? reply.close : reply.stall) = true;
      break;
    case Hostile::nested: {
      const std::uint64_t depth = 1 + pick(40);
      for (std::uint64_t i = 0; i < depth; ++i)
        reply.bytes += pick(4) ? "*1\r\n" : "*2\r\n$1\r\n0\r\n";
      reply.bytes += pick(2) ? sane : typed();
      break;
    }
    case Hostile::garbage:
      reply.bytes = random_bytes(1 + pick(200));
      (pick(2) ? reply.close : reply.stall) = true;
      break;
    case Hostile::endless_scan: {
      if (command[0] == "DBSIZE") {
        reply.bytes = S::integer(static_cast<long long>(pick(50)));
        break;
      }
      std::vector<std::string> names;
      const std::string prefix = "jitcache:v1:";
      for (std::uint64_t i = pick(6); i > 0; --i) {
        switch (pick(5)) {
        case 0:
          names.push_back(S::bulk(prefix.substr(0, pick(prefix.size()))));
          break;
        case 1:
          names.push_back(S::bulk(prefix + random_bytes(pick(70))));
          break;
        case 2: {
          const Key planted = key_for("planted " + std::to_string(pick(1000)));
          m_data[prefix + planted.digest.hex()] = forged_value(planted);
          names.push_back(S::bulk(prefix + planted.digest.hex()));
          break;
        }
        case 3:
          names.push_back(S::integer(7));
          break;
        default:
          names.push_back(S::bulk(random_bytes(pick(20))));
        }
      }
      reply.bytes = S::array({S::bulk(std::to_string(1 + pick(1u << 30))), S::array(names)});
      break;
    }
    case Hostile::silent:
      reply.stall = true;
      break;
    case Hostile::closed:
      reply.bytes = sane.substr(0, pick(2) ? 0 : pick(sane.size()));
      reply.close = true;
      break;
    case Hostile::forged: {
      const std::string value = forged_value(m_key);
      reply.bytes =
          S::bulk(command[0] == "GETRANGE"
                      ? value.substr(0, std::strtoull(command[3].c_str(), nullptr, 10) + 1)
                      : value);
      break;
    }
    case Hostile::echo: {
      std::string said;
      for (const std::string& arg : command)
        said += arg + " ";
      reply.bytes = pick(2) ? S::error("ERR " + said) : S::bulk(said);
      break;
    }
    }
    return reply;
  }

  // A value for `key` that must never be served: unsigned, signed with another key, a signature
  // of the right size that is not one, another key's signed value, or garbage behind the magic.
  std::string forged_value(const Key& key) {
    Entry entry{"opencl", "EVIL", {}, 0};
    entry.key_fields = key.stored_fields;
    const std::string bytes = encode_entry(key.digest, entry);
    switch (pick(6)) {
    case 0:
      return seal(key.digest, bytes, "");
    case 1:
      return seal(key.digest, bytes, "not the fleet's key");
    case 2: {
      std::string value = seal(key.digest, bytes, k_key);
      value[5 + pick(32)] ^= static_cast<char>(1 + pick(255));
      return value;
    }
    case 3: {
      const Key other = key_for("another kernel");
      return seal(other.digest, encode_entry(other.digest, entry), k_key); // signed for its name
    }
    case 4:
      return std::string("JCR1") + static_cast<char>(pick(3)) + random_bytes(pick(200));
    default:
      return random_bytes(1 + pick(300));
    }
  }

  Hostile m_kind;
  std::mt19937_64 m_random;
  Key m_key;
  std::mutex m_mutex;
  std::map<std::string, std::string> m_data;
  std::map<std::string, long long> m_ttl;
};

// Standard error, redirected to a file while it lives: what jitcache logs.
class CapturedStderr {
public:
  explicit CapturedStderr(const std::filesystem::path& file) : m_file(file) {
    std::fflush(stderr);
    m_saved = ::dup(2);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~CapturedStderr() { restore(); }
  std::string restore() {
    if (m_saved >= 0) {
      std::fflush(stderr);
      ::dup2(m_saved, 2);
      ::close(m_saved);
      m_saved = -1;
    }
    std::ifstream in(m_file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

private:
  std::filesystem::path m_file;
  int m_saved = -1;
};

// Every file under `dir` that holds `secret`.
std::vector<std::string> files_holding(const std::filesystem::path& dir,
                                       const std::string& secret) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file())
      continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (bytes.str().find(secret) != std::string::npos)
      out.push_back(entry.path().string());
  }
  return out;
}

class RemoteHostileTest : public ::testing::TestWithParam<Hostile> {};

TEST_P(RemoteHostileTest, NoReplyCrashesHangsServesOrLeaksAnything) {
  const Hostile kind = GetParam();
  const unsigned trials = static_cast<unsigned>(test::hostile_trials(200));
  const std::uint64_t seed =
      test::hostile_seed(20270) * 1000003 + static_cast<std::uint64_t>(kind) * 100000;
  std::cout << "hostile remote, kind " << name_of(kind) << ": " << trials
            << " trials, JITCACHE_HOSTILE_SEED=" << test::hostile_seed(20270) << "\n";
  test::TempDir cache_dir, logs;
  // Short timeouts keep the trials that stall quick; the forged kind, whose every other reply
  // is sane, gets room so that a loaded machine does not mark its remote down.
  const std::string query =
      kind == Hostile::forged ? "?timeout_ms=500&lease_ms=30" : "?timeout_ms=10&lease_ms=10";
  const std::string credentials = std::string("jc:") + k_password + "@";
  std::vector<std::pair<Key, std::string>> built;
  unsigned remote_down = 0, refused = 0, listed_ok = 0;
  std::string log;
  {
    CapturedStderr captured(logs.path() / "stderr");
    for (unsigned trial = 0; trial < trials; ++trial) {
      const std::string what = std::string(name_of(kind)) + " trial " + std::to_string(trial);
      const Key key = key_for(what);
      HostileModel model(kind, seed + trial, key);
      test::ScriptedRedis server(
          [&](const std::vector<std::string>& command) { return model.answer(command); });
      const std::string url = server.url(query, credentials);
      const auto start = std::chrono::steady_clock::now();
      const std::string own = "OWN " + what;
      Stats stats;
      {
        Cache cache(Config::from_variables({{"JITCACHE_DIR", cache_dir.path().string()},
                                            {"JITCACHE_REMOTE", url},
                                            {"JITCACHE_REMOTE_KEY", k_key}}));
        BuildInfo info;
        auto found = cache.get_or_compile(
            key,
            [&]() -> Expected<Entry> {
              return Entry{"", own, {}, 1000};
            },
            &info);
        ASSERT_TRUE(found) << what << ": " << found.error().message;
        EXPECT_EQ(found->entry.payload, own) << what; // never a forged binary
        EXPECT_EQ(info.tier, "compile") << what;
        cache.flush();
        stats = cache.session_stats();
      }
      built.emplace_back(key, own);
      remote_down += stats.get("all", Counter::remote_down) > 0;
      refused +=
          stats.get("opencl", Counter::remote_refused) + stats.get("opencl", Counter::corrupt) > 0;
      if (kind == Hostile::silent || kind == Hostile::closed) {
        EXPECT_EQ(stats.get("all", Counter::remote_down), 1u) << what;
      }
      if (kind == Hostile::forged) {
        EXPECT_EQ(stats.get("all", Counter::remote_down), 0u) << what;
        EXPECT_GE(stats.get("opencl", Counter::remote_refused) +
                      stats.get("opencl", Counter::corrupt),
                  1u)
            << what;
      }

      // As `jitcache remote pull` lists it: only values signed with the key for their name.
      RemoteStore remote(*parse_redis_url(url), k_key);
      auto listed = remote.for_each([&](const Store::Item& item) {
        if (item.valid) {
          EXPECT_EQ(item.key, key.digest) << what << ": only this trial's own entry is signed";
        }
      });
      listed_ok += static_cast<bool>(listed);
      static_cast<void>(remote.ping());
      // Each command is bounded by timeout_ms, each wait for a lease by 3 lease periods; a trial
      // sends a few dozen commands at most. A bound that cannot flake, far from a hang.
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << what;
    }
    log = captured.restore();
  }
  // Nothing forged reached the user tier: each trial's key holds that trial's own compile.
  Cache local(Config::from_variables({{"JITCACHE_DIR", cache_dir.path().string()}}));
  for (const auto& [key, own] : built) {
    BuildInfo info;
    auto found = local.get_or_compile(
        key,
        [&]() -> Expected<Entry> {
          return Entry{"", "MISSING", {}, 0};
        },
        &info);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->entry.payload, own);
    EXPECT_EQ(info.tier, "user") << own;
  }
  for (const char* secret : {k_key, k_password}) {
    EXPECT_EQ(log.find(secret), std::string::npos) << "a log line holds a secret:\n" << log;
    EXPECT_TRUE(files_holding(cache_dir.path(), secret).empty()) << secret;
  }
  std::cout << "  " << trials << " trials: 0 crashes, 0 hangs, 0 forged binaries served or kept; "
            << "remote marked down in " << remote_down << ", a value refused or counted corrupt in "
            << refused << ", listing ended cleanly in " << listed_ok << "; "
            << std::count(log.begin(), log.end(), '\n') << " log lines, no secret in them\n";
}

INSTANTIATE_TEST_SUITE_P(EveryKind, RemoteHostileTest, ::testing::ValuesIn(k_kinds),
                         [](const ::testing::TestParamInfo<Hostile>& info) {
                           return std::string(name_of(info.param));
                         });

} // namespace
} // namespace jitcache
