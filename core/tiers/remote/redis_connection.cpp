#include "core/tiers/remote/redis_connection.hpp"

#include <hiredis/hiredis.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace jitcache::detail {

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// Waits until `fd` is ready for `events`; false when `deadline` passed first. An error or a
// hang-up counts as ready: the read or write that follows reports it.
bool wait_for(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0)
      return false;
    pollfd ready{fd, events, 0};
    const int n = ::poll(&ready, 1, static_cast<int>(std::min<long long>(left, INT_MAX)));
    if (n > 0 || (n < 0 && errno != EINTR))
      return true;
  }
}

// The most elements one reply's array may have: a SCAN page of COUNT 1000 holds a few thousand.
// hiredis allocates an array's element table when it reads its header, so a header saying two
// billion (which a server that is not Redis may send) would cost 16 GiB before any element
// arrives; such a reply is refused instead (hiredis reports it as out of memory).
constexpr long long k_max_elements = 1 << 20;

// hiredis's createArray (its count is an int in 0.14, a size_t later), bounded.
template <typename F> struct CountOf;
template <typename R, typename Task, typename Count> struct CountOf<R (*)(Task, Count)> {
  using type = Count;
};
using ArrayCount = CountOf<decltype(redisReplyObjectFunctions::createArray)>::type;
decltype(redisReplyObjectFunctions::createArray) g_create_array = nullptr;
void* bounded_array(const redisReadTask* task, ArrayCount elements) {
  const long long count = static_cast<long long>(elements);
  if (count < 0 || count > k_max_elements)
    return nullptr;
  return g_create_array(task, elements);
}

// hiredis's reply functions with createArray bounded; the same for every connection.
redisReplyObjectFunctions* bounded_functions(const redisReplyObjectFunctions* defaults) {
  static redisReplyObjectFunctions functions = [&] {
    redisReplyObjectFunctions copy = *defaults;
    g_create_array = copy.createArray;
    copy.createArray = bounded_array;
    return copy;
  }();
  return &functions;
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
    : m_context(context), m_name(url.display()), m_password(url.password), m_timeout(url.timeout),
      m_reply_limit(reply_limit(url)) {}

RedisConnection::~RedisConnection() {
  redisFree(m_context);
}

std::uint64_t RedisConnection::reply_limit(const RedisUrl& url) {
  const std::uint64_t value = std::max<std::uint64_t>(url.max_bytes, 1u << 20);
  constexpr std::uint64_t room = 64u << 10;
  return value > UINT64_MAX - room ? UINT64_MAX : value + room;
}

std::string RedisConnection::hidden(std::string text) const {
  // The server was sent the password (AUTH) and may say it back in an error reply.
  if (!m_password.empty())
    for (auto at = text.find(m_password); at != std::string::npos;
         at = text.find(m_password, at + 3))
      text.replace(at, m_password.size(), "***");
  return text;
}

Expected<std::unique_ptr<RedisConnection>> RedisConnection::open(const RedisUrl& url) {
  const Clock::time_point start = Clock::now();
  redisContext* context =
      redisConnectWithTimeout(url.host.c_str(), url.port, to_timeval(url.timeout));
  if (!context)
    return Error(ErrorCode::io_error, "cannot connect to " + url.display() + ": out of memory");
  if (context->err) {
    Error error(ErrorCode::io_error, "cannot connect to " + url.display() + ": " + context->errstr);
    redisFree(context);
    return error;
  }
  if (context->reader->fn && context->reader->fn->createArray)
    context->reader->fn = bounded_functions(context->reader->fn);
  std::unique_ptr<RedisConnection> connection(new RedisConnection(context, url));
  const int flags = ::fcntl(context->fd, F_GETFL);
  if (flags < 0 || ::fcntl(context->fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return Error(ErrorCode::io_error,
                 "cannot use the socket to " + url.display() + ": " + std::strerror(errno));
  if (!url.password.empty()) {
    std::vector<std::string_view> auth = {"AUTH"};
    if (!url.user.empty())
      auth.push_back(url.user);
    auth.push_back(url.password);
    if (auto ok = connection->run(auth, start); !ok)
      return Error(ErrorCode::io_error,
                   "AUTH refused by " + url.display() + ": " + ok.error().message);
  }
  if (url.db != 0) {
    const std::string db = std::to_string(url.db);
    if (auto ok = connection->run({"SELECT", db}, start); !ok)
      return Error(ErrorCode::io_error,
                   "SELECT " + db + " refused by " + url.display() + ": " + ok.error().message);
  }
  return connection;
}

Error RedisConnection::failed(const std::string& what) {
  m_broken = true; // a command left half-sent or half-read: nothing after it can be trusted
  return Error(ErrorCode::io_error, m_name + ": " + what);
}

Expected<RedisReply> RedisConnection::run(const std::vector<std::string_view>& args) {
  return run(args, Clock::now());
}

Expected<RedisReply> RedisConnection::run(const std::vector<std::string_view>& args,
                                          Clock::time_point start) {
  if (m_broken)
    return Error(ErrorCode::io_error, "the connection to " + m_name + " failed earlier");
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (std::string_view arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  char* formatted = nullptr;
  const int length = redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), argv.data(),
                                            lengths.data());
  if (length < 0)
    return Error(ErrorCode::io_error, m_name + ": out of memory for a command");
  const std::unique_ptr<char, void (*)(char*)> command(formatted, redisFreeCommand);

  std::uint64_t moved = 0;
  const auto deadline = [&] {
    return start + m_timeout +
           std::chrono::milliseconds(moved * k_remote_ms_per_mib.count() / (1u << 20));
  };
  const std::string late = "no answer within " + std::to_string(m_timeout.count()) + " ms";
  const int fd = m_context->fd;
  for (std::size_t sent = 0; sent < static_cast<std::size_t>(length);) {
    const ssize_t n = ::send(fd, formatted + sent, length - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      moved += static_cast<std::uint64_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, POLLOUT, deadline()))
        return failed(late);
    } else if (n < 0 && errno != EINTR) {
      return failed(std::string("cannot send: ") + std::strerror(errno));
    }
  }

  std::uint64_t received = 0;
  void* answer = nullptr;
  char buffer[64 << 10];
  for (;;) {
    if (redisReaderGetReply(m_context->reader, &answer) != REDIS_OK)
      return failed(std::string("not the Redis protocol: ") + hidden(m_context->reader->errstr));
    if (answer)
      break;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      received += static_cast<std::uint64_t>(n);
      moved += static_cast<std::uint64_t>(n);
      if (received > m_reply_limit)
        return failed("answered " + std::string(args[0]) + " with more than " +
                      std::to_string(m_reply_limit) + " bytes");
      if (redisReaderFeed(m_context->reader, buffer, static_cast<std::size_t>(n)) != REDIS_OK)
        return failed("out of memory for a reply");
    } else if (n == 0) {
      return failed("closed the connection");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(fd, POLLIN, deadline()))
        return failed(late);
    } else if (errno != EINTR) {
      return failed(std::string("cannot receive: ") + std::strerror(errno));
    }
  }
  const std::unique_ptr<redisReply, void (*)(void*)> reply(static_cast<redisReply*>(answer),
                                                           freeReplyObject);
  if (reply->type == REDIS_REPLY_ERROR)
    return Error(ErrorCode::runtime_error, m_name + " answered " + std::string(args[0]) + ": " +
                                               hidden(std::string(reply->str, reply->len)));
  return convert(*reply);
}

} // namespace jitcache::detail
