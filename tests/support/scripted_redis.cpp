#include "tests/support/scripted_redis.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>

namespace jitcache::test {

namespace {

// One command off the front of `buffer` (a RESP array of bulk strings, as clients send them):
// nullopt while it is incomplete; an empty vector when the bytes are not a command.
std::optional<std::vector<std::string>> take_command(std::string& buffer) {
  std::size_t at = 0;
  const auto line = [&]() -> std::optional<std::string> {
    const auto end = buffer.find("\r\n", at);
    if (end == std::string::npos)
      return std::nullopt;
    std::string out = buffer.substr(at, end - at);
    at = end + 2;
    return out;
  };
  auto header = line();
  if (!header)
    return std::nullopt;
  if (header->empty() || (*header)[0] != '*')
    return std::vector<std::string>();
  const long count = std::strtol(header->c_str() + 1, nullptr, 10);
  std::vector<std::string> args;
  for (long i = 0; i < count; ++i) {
    auto size_line = line();
    if (!size_line)
      return std::nullopt;
    if (size_line->empty() || (*size_line)[0] != '$')
      return std::vector<std::string>();
    const std::size_t size = std::strtoul(size_line->c_str() + 1, nullptr, 10);
    if (buffer.size() < at + size + 2)
      return std::nullopt;
    args.push_back(buffer.substr(at, size));
    at += size + 2;
  }
  buffer.erase(0, at);
  return args;
}

} // namespace

ScriptedRedis::ScriptedRedis(Answer answer) : m_answer(std::move(answer)) {
  m_listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (m_listener < 0 || ::bind(m_listener, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      ::listen(m_listener, 64) != 0 ||
      ::getsockname(m_listener, reinterpret_cast<sockaddr*>(&address), &size) != 0)
    throw std::runtime_error("cannot listen on loopback");
  m_port = ntohs(address.sin_port);
  m_acceptor = std::thread([this] {
    for (;;) {
      const int fd = ::accept(m_listener, nullptr, nullptr);
      if (fd < 0 || m_stopping) {
        if (fd >= 0)
          ::close(fd);
        return;
      }
      ++m_connections;
      std::lock_guard<std::mutex> lock(m_mutex);
      m_servers.emplace_back([this, fd] { serve(fd); });
    }
  });
}

ScriptedRedis::~ScriptedRedis() {
  m_stopping = true;
  ::shutdown(m_listener, SHUT_RDWR); // wakes the accept()
  m_acceptor.join();
  ::close(m_listener);
  std::lock_guard<std::mutex> lock(m_mutex);
  for (std::thread& server : m_servers)
    server.join();
}

std::string ScriptedRedis::url(const std::string& query, const std::string& credentials) const {
  return "redis://" + credentials + "127.0.0.1:" + std::to_string(m_port) + query;
}

std::string ScriptedRedis::bulk(const std::string& text) {
  return "$" + std::to_string(text.size()) + "\r\n" + text + "\r\n";
}

std::string ScriptedRedis::array(const std::vector<std::string>& encoded_items) {
  std::string out = "*" + std::to_string(encoded_items.size()) + "\r\n";
  for (const std::string& item : encoded_items)
    out += item;
  return out;
}

void ScriptedRedis::serve(int fd) {
  // Polls in short steps so that the destructor's m_stopping ends a connection the client keeps.
  const auto readable = [&] {
    for (;;) {
      if (m_stopping)
        return false;
      pollfd ready{fd, POLLIN, 0};
      if (::poll(&ready, 1, 20) > 0)
        return true;
    }
  };
  std::string buffer;
  char chunk[64 << 10];
  for (;;) {
    if (!readable())
      break;
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0)
      break;
    buffer.append(chunk, static_cast<std::size_t>(n));
    bool done = false;
    while (!done) {
      auto command = take_command(buffer);
      if (!command)
        break;
      if (command->empty()) {
        done = true;
        break;
      }
      ++m_commands;
      const Reply reply = m_answer(*command);
      for (std::size_t sent = 0; sent < reply.bytes.size();) {
        const ssize_t w =
            ::send(fd, reply.bytes.data() + sent, reply.bytes.size() - sent, MSG_NOSIGNAL);
        if (w <= 0) {
          done = true;
          break;
        }
        sent += static_cast<std::size_t>(w);
      }
      if (reply.close) {
        done = true;
      } else if (reply.stall) {
        // Silent until the client gives up and closes (or the server stops).
        while (readable() && ::recv(fd, chunk, sizeof chunk, 0) > 0) {
        }
        done = true;
      }
    }
    if (done)
      break;
  }
  ::close(fd);
}

} // namespace jitcache::test
