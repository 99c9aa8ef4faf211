#include "core/redis_connection.hpp"

#include <hiredis/hiredis.h>

#include <sys/time.h>

#include <cerrno>

namespace jitcache {

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

RedisReply convert(const redisReply& reply) {
  RedisReply out;
  switch (reply.type) {
  case REDIS_REPLY_STRING:
    out.kind = RedisReply::Kind::string;
    out.text.assign(reply.str, reply.len);
    break;
  case REDIS_REPLY_STATUS:
    out.kind = RedisReply::Kind::status;
    out.text.assign(reply.str, reply.len);
    break;
  case REDIS_REPLY_INTEGER:
    out.kind = RedisReply::Kind::integer;
    out.integer = reply.integer;
    break;
  case REDIS_REPLY_ARRAY:
    out.kind = RedisReply::Kind::array;
    for (std::size_t i = 0; i < reply.elements; ++i)
      out.items.push_back(convert(*reply.element[i]));
    break;
  default:
    break;
  }
  return out;
}

} // namespace

RedisConnection::RedisConnection(redisContext* context, const RedisUrl& url)
    : m_context(context), m_name(url.display()), m_timeout(url.timeout) {}

RedisConnection::~RedisConnection() {
  redisFree(m_context);
}

Expected<std::unique_ptr<RedisConnection>> RedisConnection::open(const RedisUrl& url) {
  redisContext* context =
      redisConnectWithTimeout(url.host.c_str(), url.port, to_timeval(url.timeout));
  if (!context)
    return Error(ErrorCode::io_error, "cannot connect to " + url.display() + ": out of memory");
  if (context->err) {
    Error error(ErrorCode::io_error, "cannot connect to " + url.display() + ": " + context->errstr);
    redisFree(context);
    return error;
  }
  std::unique_ptr<RedisConnection> connection(new RedisConnection(context, url));
  if (redisSetTimeout(context, to_timeval(url.timeout)) != REDIS_OK)
    return Error(ErrorCode::io_error, "cannot set the timeout of " + url.display());
  if (!url.password.empty()) {
    std::vector<std::string_view> auth = {"AUTH"};
    if (!url.user.empty())
      auth.push_back(url.user);
    auth.push_back(url.password);
    if (auto ok = connection->run(auth); !ok)
      return Error(ErrorCode::io_error,
                   "AUTH refused by " + url.display() + ": " + ok.error().message);
  }
  if (url.db != 0) {
    const std::string db = std::to_string(url.db);
    if (auto ok = connection->run({"SELECT", db}); !ok)
      return Error(ErrorCode::io_error,
                   "SELECT " + db + " refused by " + url.display() + ": " + ok.error().message);
  }
  return connection;
}

Expected<RedisReply> RedisConnection::run(const std::vector<std::string_view>& args) {
  if (m_broken)
    return Error(ErrorCode::io_error, "the connection to " + m_name + " failed earlier");
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (std::string_view arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(m_context, static_cast<int>(argv.size()), argv.data(), lengths.data()));
  if (!reply) {
    m_broken = true; // hiredis leaves a context that failed unusable
    const bool timed_out =
        m_context->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
    return Error(ErrorCode::io_error,
                 m_name + ": " +
                     (timed_out ? "no answer within " + std::to_string(m_timeout.count()) + " ms"
                                : std::string(m_context->err ? m_context->errstr : "no reply")));
  }
  std::unique_ptr<redisReply, void (*)(void*)> owned(reply, freeReplyObject);
  if (reply->type == REDIS_REPLY_ERROR)
    return Error(ErrorCode::runtime_error, m_name + " answered " + std::string(args[0]) + ": " +
                                               std::string(reply->str, reply->len));
  return convert(*reply);
}

} // namespace jitcache
