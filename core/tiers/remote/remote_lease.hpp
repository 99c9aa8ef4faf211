#pragma once

#include "core/tiers/remote/remote_store.hpp"

#include <jitcache/digest.hpp>
#include <jitcache/expected.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace jitcache::detail {

/// The right to compile one key across a fleet: the remote half of single flight (CompileLease
/// orders the processes of one machine, this one the machines sharing a remote tier). A lease
/// is the Redis key `prefix + "lease:" + key hex`, set with `SET NX PX` to an owner string
/// (host, pid, a random number) for the URL's lease_ms; its holder renews it a third of the way
/// through (only while the value is still its own) and deletes it when it lets go (likewise). A
/// holder that dies stops renewing, the key expires, and one waiter takes over.
///
/// Whoever can write to the server can plant a lease; that must cost a miss and a compile, not
/// a stall. So a waiter waits only for what looks like a live holder: a key without expiry, or
/// one that expires later than any lease_ms can say, is not a lease; one whose value and expiry
/// show no renewal for a whole lease_ms is abandoned; and no holder is waited for longer than
/// k_lease_waits lease periods, renewing or not.
class RemoteLease {
public:
  /// How many lease periods a waiter waits at most for a holder that keeps renewing.
  static constexpr int k_lease_waits = 3;

  struct Options {
    /// The longest a waiter waits for a holder that keeps renewing (a compile that hangs, or a
    /// writer that fakes renewals): then it compiles too. Unset: k_lease_waits times the URL's
    /// lease_ms (30 s by default; a fleet whose compiles take longer raises lease_ms).
    std::optional<std::chrono::milliseconds> max_wait;
    /// The longest pause between two looks (pauses start at 2 ms and double).
    std::chrono::milliseconds max_poll = std::chrono::milliseconds(100);
  };

  /// Waits until this process may compile `key` (returns the held lease: compile, store, then
  /// destroy it), or `ready()` returns true because another machine stored the entry (returns
  /// nullptr). `ready` is called before each wait and once more after the lease is won.
  /// Errors: io_error or runtime_error when the server fails (the caller backs off from the
  /// tier and compiles), and unsupported when the lease found is not waited for (no expiry, one
  /// too long, not renewed for a lease period) or the wait ran past options.max_wait (the
  /// caller compiles without a lease).
  static Expected<std::shared_ptr<RemoteLease>> acquire(std::shared_ptr<RemoteStore> remote,
                                                        const Digest& key,
                                                        const std::function<bool()>& ready,
                                                        const Options& options);

  /// Lets go: stops renewing and deletes the lease when it is still this holder's. Failures are
  /// ignored (the lease then expires).
  ~RemoteLease();
  RemoteLease(const RemoteLease&) = delete;
  RemoteLease& operator=(const RemoteLease&) = delete;

  /// Whether this lease was taken after waiting for another holder's, which then ended without
  /// the entry on the remote (it expired, or its holder let go after a failed compile or store).
  /// For tests and messages.
  bool taken_over() const { return m_taken_over; }

private:
  RemoteLease(std::shared_ptr<RemoteStore> remote, std::string name, std::string owner,
              bool taken_over);
  void renew();

  std::shared_ptr<RemoteStore> m_remote;
  std::string m_name;
  std::string m_owner;
  bool m_taken_over;
  std::mutex m_mutex;
  std::condition_variable m_stop_cv;
  bool m_stop = false;
  /// fork_generation() at acquisition: in a child, the renewer thread does not exist and the
  /// lease is the parent's, so the destructor neither joins nor releases.
  unsigned m_generation;
  std::unique_ptr<std::thread> m_renewer;
};

} // namespace jitcache::detail
