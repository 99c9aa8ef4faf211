// The remote tier's costs: a remote hit against a user-tier hit for 100 KB and 1.6 MB entries,
// and what a remote that is gone or stalled adds to a hit and to a miss.
//
// usage: bench_remote DIR REDIS_URL
//   DIR        an empty directory on a local disk (user tiers are made in it)
//   REDIS_URL  a running server for this benchmark alone (it is written to), e.g.
//              redis://127.0.0.1:6390
// Prints Markdown tables of medians. A stalled remote is a local socket that accepts and never
// answers; a gone one is a port nobody listens on.
#include "bench/median.hpp"
#include "core/tiers/remote/remote_store.hpp"
#include "core/tiers/user/user_store.hpp"

#include <jitcache/cache.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace jitcache;
using bench::median;
using jitcache::detail::open_user_store;
using jitcache::detail::parse_redis_url;
using jitcache::detail::RemoteStore;
using clock_type = std::chrono::steady_clock;

constexpr int k_reads = 200;
constexpr int k_misses = 200;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_remote: %s\n", what.c_str());
  std::exit(1);
}

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

Key key_for(const std::string& source) {
  return KeyBuilder("opencl").device("device_name", "bench").source(source).finish();
}

// A listening socket that never accepts: connects succeed, commands are never answered.
int stalled_port(int& fd) {
  fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    die("cannot listen");
  return ntohs(address.sin_port);
}

void hit_latency(const std::string& dir, const std::string& url) {
  auto parsed = parse_redis_url(url + "?unsigned=1");
  if (!parsed)
    die(parsed.error().message);
  RemoteStore remote(*parsed, "");
  auto signed_url = parse_redis_url(url);
  RemoteStore signed_remote(*signed_url, "bench key");
  auto user = open_user_store(Config::from_variables({{"JITCACHE_DIR", dir + "/latency"}}), false);
  if (!user)
    die(user.error().message);
  std::printf("| entry | user-tier hit (ms) | remote hit, unsigned (ms) | remote hit, signed (ms) "
              "|\n|---|---|---|---|\n");
  for (const std::size_t bytes : {std::size_t(100) << 10, std::size_t(1600) << 10}) {
    const Key key = key_for("entry of " + std::to_string(bytes));
    Entry entry{"opencl", std::string(bytes, 'x'), {}, 0};
    entry.key_fields = key.stored_fields;
    if (!(*user)->put(key.digest, entry) || !remote.put(key.digest, entry))
      die("cannot store the entry");
    const Key signed_key = key_for("signed entry of " + std::to_string(bytes));
    if (!signed_remote.put(signed_key.digest, entry))
      die("cannot store the signed entry");
    std::vector<double> local, far, far_signed;
    for (int i = 0; i < k_reads; ++i) {
      auto start = clock_type::now();
      if (!(*user)->get(key.digest).value())
        die("user-tier miss");
      local.push_back(ms_since(start));
      start = clock_type::now();
      if (!remote.get(key.digest).value())
        die("remote miss");
      far.push_back(ms_since(start));
      start = clock_type::now();
      if (!signed_remote.get(signed_key.digest).value())
        die("signed remote miss");
      far_signed.push_back(ms_since(start));
    }
    std::printf("| %zu KB | %.3f | %.3f | %.3f |\n", bytes >> 10, median(local), median(far),
                median(far_signed));
  }
}

// Medians of a hit and of a miss (a compile that takes no time) through a Cache whose remote is
// `url`; the first miss pays the remote's failure, the back-off spares the others.
void dead_remote(const std::string& dir, const std::string& name, const std::string& url) {
  const Config config = Config::from_variables(
      {{"JITCACHE_DIR", dir + "/" + name}, {"JITCACHE_REMOTE", url}, {"JITCACHE_LOG", "error"}});
  Cache cache(config);
  const auto compile = []() -> Expected<Entry> { return Entry{"", std::string(100 << 10, 'b')}; };
  std::vector<double> misses;
  double first = 0;
  for (int i = 0; i < k_misses; ++i) {
    const auto start = clock_type::now();
    if (!cache.get_or_compile(key_for(name + " miss " + std::to_string(i)), compile))
      die("miss failed");
    if (i == 0)
      first = ms_since(start);
    else
      misses.push_back(ms_since(start));
  }
  cache.flush();
  Cache fresh(config); // hits from the user tier, not the memory tier
  std::vector<double> hits;
  for (int i = 0; i < k_misses; ++i) {
    const auto start = clock_type::now();
    if (!fresh.get_or_compile(key_for(name + " miss " + std::to_string(i)), compile))
      die("hit failed");
    hits.push_back(ms_since(start));
  }
  std::printf("| %s | %.3f | %.3f | %.3f |\n", name.c_str(), median(hits), first, median(misses));
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3)
    die("usage: bench_remote DIR REDIS_URL");
  const std::string dir = argv[1], url = argv[2];
  hit_latency(dir, url);
  int fd = -1;
  const int stalled = stalled_port(fd);
  int gone_fd = -1;
  const int gone = stalled_port(gone_fd);
  ::close(gone_fd); // nobody listens there now
  std::printf("\n| remote | hit (ms) | first miss (ms) | later misses (ms) |\n|---|---|---|---|\n");
  dead_remote(dir, "none", "");
  dead_remote(dir, "working", url + "?unsigned=1&prefix=bench-dead:");
  dead_remote(dir, "gone", "redis://127.0.0.1:" + std::to_string(gone));
  dead_remote(dir, "stalled", "redis://127.0.0.1:" + std::to_string(stalled));
  ::close(fd);
  return 0;
}
