#include "core/tiers/remote/remote_lease.hpp"

#include "core/support/clock.hpp"
#include "core/support/fork_guard.hpp"

#include <unistd.h>

#include <algorithm>
#include <random>
#include <vector>

namespace jitcache::detail {

namespace {

// Only the holder that set a lease may extend or delete it: a holder that ran past its lease
// must not touch its successor's.
constexpr char k_renew[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then "
                           "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
constexpr char k_release[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then "
                             "return redis.call('DEL', KEYS[1]) else return 0 end";

std::string owner_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0)
    host[0] = '?';
  std::random_device random;
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + std::to_string(random());
}

} // namespace

RemoteLease::RemoteLease(std::shared_ptr<RemoteStore> remote, std::string name, std::string owner,
                         bool taken_over)
    : m_remote(std::move(remote)), m_name(std::move(name)), m_owner(std::move(owner)),
      m_taken_over(taken_over), m_generation(fork_generation()),
      m_renewer(std::make_unique<std::thread>([this] { renew(); })) {}

RemoteLease::~RemoteLease() {
  if (m_generation != fork_generation()) {
    // The parent's thread: not this process's to join, nor to destroy (a joinable std::thread
    // ends the process). Kept where it stays reachable, so no leak checker reports it.
    static auto* parents_renewers = new std::vector<std::unique_ptr<std::thread>>();
    parents_renewers->push_back(std::move(m_renewer));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_stop_cv.notify_all();
  m_renewer->join();
  static_cast<void>(m_remote->run({"EVAL", k_release, "1", m_name, m_owner}));
}

// The real clock throughout: the server expires the lease in its real time, so a renewal paced
// by any other clock would let it lapse (the waits in acquire() read the injected one).
void RemoteLease::renew() {
  const auto lease = m_remote->url().lease;
  const std::string ms = std::to_string(lease.count());
  auto held_until = std::chrono::steady_clock::now() + lease;
  std::unique_lock<std::mutex> lock(m_mutex);
  while (!m_stop_cv.wait_for(lock, lease / 3, [&] { return m_stop; })) {
    lock.unlock();
    auto renewed = m_remote->run({"EVAL", k_renew, "1", m_name, m_owner, ms});
    const auto now = std::chrono::steady_clock::now();
    lock.lock();
    if (renewed && renewed->integer == 0)
      return; // the lease was lost (it expired): a waiter has taken over
    if (renewed)
      held_until = now + lease;
    else if (now >= held_until)
      return; // the server failed for a whole lease: waiters take over when it expires
    // A failed renewal (one slow reply) is tried again at the next period while the lease holds.
  }
}

Expected<std::shared_ptr<RemoteLease>> RemoteLease::acquire(std::shared_ptr<RemoteStore> remote,
                                                            const Digest& key,
                                                            const std::function<bool()>& ready,
                                                            const Options& options) {
  detail::Clock& clock = detail::clock(); // the waits, not the lease's renewal (see renew())
  const std::string name = remote->redis_key("lease:" + key.hex());
  const std::string owner = owner_name();
  const auto lease_ms = remote->url().lease;
  const std::string ms = std::to_string(lease_ms.count());
  const auto max_wait = options.max_wait.value_or(k_lease_waits * lease_ms);
  const auto start = clock.steady();
  const auto not_waited = [&](const std::string& why) {
    return Error(ErrorCode::unsupported,
                 "the lease on " + key.hex() + " at " + remote->url().display() + " " + why);
  };
  auto pause = std::chrono::milliseconds(2);
  bool waited = false;
  // The holder's lease as last seen, and when it last showed a renewal (a new value, or a later
  // expiry): a lease nobody renews is not a holder's, whatever its expiry says.
  std::string seen_value;
  long long seen_ttl = -3;
  std::chrono::steady_clock::time_point renewed_at = start;
  for (;;) {
    if (ready())
      return std::shared_ptr<RemoteLease>();
    auto set = remote->run({"SET", name, owner, "NX", "PX", ms});
    if (!set)
      return std::move(set).error();
    if (set->kind == RedisReply::Kind::status) { // OK: won
      std::shared_ptr<RemoteLease> lease(new RemoteLease(remote, name, owner, waited));
      if (ready()) // stored just before the lease was won
        return std::shared_ptr<RemoteLease>();
      return lease;
    }
    auto value = remote->run({"GET", name});
    if (!value)
      return std::move(value).error();
    auto ttl = remote->run({"PTTL", name});
    if (!ttl)
      return std::move(ttl).error();
    const auto now = clock.steady();
    const bool gone = value->kind == RedisReply::Kind::nil ||
                      (ttl->kind == RedisReply::Kind::integer && ttl->integer == -2);
    if (!gone) { // not let go of (or expired) since the SET
      if (value->kind != RedisReply::Kind::string || ttl->kind != RedisReply::Kind::integer ||
          ttl->integer < 0)
        return not_waited("has no expiry: not a lease (a holder's always expires); not waited "
                          "for");
      if (ttl->integer > k_remote_max_lease.count())
        return not_waited("expires in " + std::to_string(ttl->integer / 1000) +
                          " s, later than any lease: not waited for");
      if (value->text != seen_value || ttl->integer > seen_ttl)
        renewed_at = now;
      seen_value = std::move(value->text);
      seen_ttl = ttl->integer;
      if (now - renewed_at >= lease_ms)
        return not_waited("was not renewed for " + std::to_string(lease_ms.count()) +
                          " ms: its holder is gone; compiling here too");
    }
    if (now - start >= max_wait)
      return not_waited("is still held after " + std::to_string(max_wait.count()) +
                        " ms of waiting for another machine's compile; compiling here too");
    waited = true;
    clock.sleep_for(pause);
    // At least four looks per lease period: a holder renews every third of it, so a renewal
    // shows between two looks well within one period.
    pause = std::min(
        {pause * 2, options.max_poll, std::max(std::chrono::milliseconds(1), lease_ms / 4)});
  }
}

} // namespace jitcache::detail
