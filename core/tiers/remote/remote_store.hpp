#pragma once

#include "core/tiers/remote/redis_connection.hpp"
#include "core/tiers/remote/redis_url.hpp"

#include <jitcache/store.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

namespace jitcache::detail {

/// A remote tier on a Redis server: each entry is one string value, the entry's stored bytes
/// (core/tiers/entry_codec) sealed (core/tiers/remote/remote_seal: signed with the fleet's key when
/// there is one), under `url.prefix + key hex`. Thread-safe: commands run on a small pool of
/// connections, each bounded by the URL's timeout.
///
/// Reading: a value that is not a sealed entry, or fails entry_codec's checks (another key, bad
/// checksum), is a miss counted by corrupt_seen(); one whose seal is not trusted (unsigned or
/// wrongly signed while a key is set) is a miss counted by refused_seen(). Each is warned about
/// once per key; neither is ever handed to a caller. A failure of the server (refused,
/// timed out, closed, an error reply) is an io_error or runtime_error: the caller backs off.
class RemoteStore final : public Store {
public:
  /// A store on `url`, signing and checking with `hmac_key` (empty: unsigned; see writable()).
  /// Connects lazily, at the first command.
  RemoteStore(RedisUrl url, std::string hmac_key);

  std::string name() const override { return "remote"; }
  /// False when the URL says readonly=1, or when there is no key to sign with and the URL does
  /// not say unsigned=1 (an unsigned shared cache lets anyone who reaches it run code on every
  /// GPU that reads it).
  bool writable() const override;
  /// Whether entries are read at all: with a key to check them, or when the URL says unsigned=1
  /// (trusting the server). Without either, visit() and get() are misses that ask nothing and
  /// for_each() is an unsupported error.
  bool readable() const;
  Expected<std::optional<Entry>> get(const Digest& key) override;
  /// A value that is not a sealed entry or fails its checks is damaged, one whose seal is not
  /// trusted untrusted, each time it is read (the value stays until a write replaces it).
  Expected<Visit> visit(const Digest& key,
                        const std::function<void(const EntryView&)>& use) override;
  /// Sends `entry`, sealed. Errors: read_only (see writable()), store_full (larger than the
  /// URL's max_bytes: not sent), io_error and runtime_error (the server failed).
  Expected<void> put(const Digest& key, const Entry& entry) override;
  Expected<bool> remove(const Digest& key) override;
  /// Every value under the prefix (SCAN matching the prefix as a name, not a pattern; then each
  /// read as visit() reads it); `valid` says whether it is one this store would hand out. Other
  /// keys (leases, names that do not start with the prefix, whatever the server says) and values
  /// larger than max_bytes are skipped. The listing takes at most a number of SCAN pages
  /// proportional to what DBSIZE counts: a server whose cursor never returns to 0 is an
  /// io_error, as is a reply of the wrong shape.
  Expected<void> for_each(const std::function<void(const Item&)>& fn) override;

  /// Sends PING. Errors as put().
  Expected<void> ping();
  /// Whether an entry of `bytes` stored bytes is small enough to be sent.
  bool fits(std::uint64_t bytes) const { return bytes <= m_url.max_bytes; }

  const RedisUrl& url() const { return m_url; }
  /// How entries are signed and checked, in one line (for `jitcache info` and warnings).
  std::string signing() const;
  /// Values found damaged, and values refused for their seal, since the store was made.
  std::uint64_t corrupt_seen() const { return m_corrupt; }
  std::uint64_t refused_seen() const { return m_refused; }

  /// Runs one command on a pooled connection (made when none is idle; in a child of the process
  /// that opened them, the idle ones are closed and new ones made). Errors: io_error (the
  /// connection failed or timed out; every idle connection is dropped too, as the server is
  /// likely gone), runtime_error (an error reply).
  Expected<RedisReply> run(const std::vector<std::string_view>& args);
  /// `url.prefix + name`: where a value named `name` lives.
  std::string redis_key(std::string_view name) const { return m_url.prefix + std::string(name); }

private:
  /// The sealed value stored for `key`: nullopt when there is none or it is larger than
  /// max_bytes allows (warned about once; only that much of it is sent). Errors as run().
  Expected<std::optional<std::string>> value(const Digest& key);
  /// The entry bytes of `value` read under `key`, or why not (counted, warned about once):
  /// damaged or untrusted.
  std::variant<EntryView, Visit> open(const Digest& key, std::string_view value);

  const RedisUrl m_url;
  const std::string m_hmac_key;
  std::mutex m_mutex;
  std::vector<std::unique_ptr<RedisConnection>> m_idle;
  /// fork_generation() of the process the idle connections were opened in: a child of it must
  /// not talk on its parent's sockets (the replies would go to either process).
  unsigned m_idle_generation;
  std::atomic<std::uint64_t> m_corrupt{0};
  std::atomic<std::uint64_t> m_refused{0};
};

} // namespace jitcache::detail
