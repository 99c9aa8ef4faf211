#pragma once

#include "core/redis_url.hpp"

#include <jitcache/expected.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

namespace jitcache {

/// A Redis reply, reduced to what the remote tier reads.
struct RedisReply {
  enum class Kind { nil, string, integer, status, array };
  Kind kind = Kind::nil;
  std::string text;              ///< string and status replies
  long long integer = 0;         ///< integer replies
  std::vector<RedisReply> items; ///< array replies
};

/// One connection to a Redis server (hiredis), connected, authenticated and with its database
/// selected. Every command is bounded by the URL's timeout; any failure (refused, timed out,
/// closed, an error reply) is an Error, after which the connection must be dropped. Not
/// thread-safe: one thread at a time (RemoteStore keeps a pool).
class RedisConnection {
public:
  /// Connects to `url` within url.timeout, then AUTH (when the URL has a password) and SELECT
  /// (when db is not 0). Errors: io_error naming the server (password hidden) and what failed.
  static Expected<std::unique_ptr<RedisConnection>> open(const RedisUrl& url);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  /// Sends one command (binary-safe arguments) and reads its reply. Errors: io_error (the
  /// connection failed or timed out: drop it), runtime_error (the server answered with an error
  /// reply; the message has it).
  Expected<RedisReply> run(const std::vector<std::string_view>& args);

private:
  RedisConnection(redisContext* context, const RedisUrl& url);
  redisContext* m_context;
  std::string m_name; ///< the URL's display(), for messages
  std::chrono::milliseconds m_timeout;
  bool m_broken = false;
};

} // namespace jitcache
