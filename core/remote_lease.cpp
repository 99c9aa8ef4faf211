#include "core/remote_lease.hpp"

#include "core/fork_guard.hpp"

#include <unistd.h>

#include <random>
#include <vector>

namespace jitcache {

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
  const std::string name = remote->redis_key("lease:" + key.hex());
  const std::string owner = owner_name();
  const std::string ms = std::to_string(remote->url().lease.count());
  const auto deadline = std::chrono::steady_clock::now() + options.max_wait;
  auto pause = std::chrono::milliseconds(2);
  bool waited = false;
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
    if (std::chrono::steady_clock::now() >= deadline)
      return Error(ErrorCode::unsupported, "waited " +
                                               std::to_string(options.max_wait.count() / 1000) +
                                               " s for another machine's compile of " + key.hex());
    waited = true;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, options.max_poll);
  }
}

} // namespace jitcache
