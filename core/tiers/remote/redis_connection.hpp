#pragma once

#include "core/tiers/remote/redis_url.hpp"

#include <jitcache/expected.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

namespace jitcache::detail {

/// A Redis reply, reduced to what the remote tier reads.
struct RedisReply {
  enum class Kind { nil, string, integer, status, array };
  Kind kind = Kind::nil;
  std::string text;              ///< string and status replies
  long long integer = 0;         ///< integer replies
  std::vector<RedisReply> items; ///< array replies
};

/// One connection to a Redis server (hiredis connects and parses; the socket is non-blocking and
/// read and written here), connected, authenticated and with its database selected. Each command
/// must be sent and answered within a deadline: the URL's timeout plus k_remote_ms_per_mib for
/// every MiB moved, however the server dribbles its bytes. A reply larger than reply_limit()
/// ends the command. Any failure (refused, timed out, closed, too large, not the protocol) is an
/// io_error, after which the connection must be dropped; an error reply is a runtime_error. Not
/// thread-safe: one thread at a time (RemoteStore keeps a pool).
class RedisConnection {
public:
  /// Connects to `url`, then sends AUTH (when the URL has a password) and SELECT (when db is not
  /// 0), all within url.timeout (a host name is resolved before, unbounded). Errors: io_error
  /// naming the server (password hidden) and what failed.
  static Expected<std::unique_ptr<RedisConnection>> open(const RedisUrl& url);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  /// Sends one command (binary-safe arguments) and reads its reply. Errors: io_error (the
  /// connection failed or timed out: drop it), runtime_error (the server answered with an error
  /// reply; the message has it).
  Expected<RedisReply> run(const std::vector<std::string_view>& args);

  /// The most bytes a reply may have on `url`: a value of max_bytes sealed, or a listing, with
  /// room for the protocol (a server that is not Redis cannot make the process allocate more).
  static std::uint64_t reply_limit(const RedisUrl& url);

private:
  using Clock = std::chrono::steady_clock;
  RedisConnection(redisContext* context, const RedisUrl& url);
  /// run() with the timeout counted from `start`.
  Expected<RedisReply> run(const std::vector<std::string_view>& args, Clock::time_point start);
  Error failed(const std::string& what);
  /// `text` (from the server) with the password replaced by `***`.
  std::string hidden(std::string text) const;
  redisContext* m_context;
  std::string m_name;     ///< the URL's display(), for messages
  std::string m_password; ///< never in a message: see hidden()
  std::chrono::milliseconds m_timeout;
  std::uint64_t m_reply_limit;
  bool m_broken = false;
};

} // namespace jitcache::detail
