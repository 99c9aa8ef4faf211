#include "tests/support/redis_server.hpp"

#include "core/tiers/remote/redis_connection.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace jitcache::test {

using detail::parse_redis_url;
using detail::RedisConnection;

namespace {

constexpr const char* k_binary = "redis-server"; // found on PATH

// A port the kernel had free a moment ago (the server binds it right after).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    throw std::runtime_error("no free port");
  ::close(fd);
  return ntohs(address.sin_port);
}

} // namespace

RedisServer::RedisServer() : m_port(free_port()) {}

RedisServer::~RedisServer() {
  stop();
}

bool RedisServer::available() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execlp(k_binary, k_binary, "--version", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

std::string RedisServer::url(const std::string& query) const {
  return "redis://127.0.0.1:" + std::to_string(m_port) + query;
}

void RedisServer::start() {
  const std::string port = std::to_string(m_port);
  const std::string dir = m_dir.path().string();
  m_pid = ::fork();
  if (m_pid < 0)
    throw std::runtime_error("fork failed");
  if (m_pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    std::vector<const char*> argv = {k_binary,     "--port",
                                     port.c_str(), "--bind",
                                     "127.0.0.1",  "--dir",
                                     dir.c_str(),  "--save",
                                     "",           "--appendonly",
                                     "no",         "--daemonize",
                                     "no",         "--enable-debug-command",
                                     "yes",        "--loglevel",
                                     "warning",    nullptr};
    ::execvp(k_binary, const_cast<char* const*>(argv.data()));
    ::_exit(127);
  }
  auto url = parse_redis_url(this->url());
  for (int attempt = 0; attempt < 500; ++attempt) {
    if (auto connection = RedisConnection::open(*url); connection && (*connection)->run({"PING"}))
      return;
    int status = 0;
    if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
      m_pid = -1;
      throw std::runtime_error("redis-server exited at start (port " + port + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop();
  throw std::runtime_error("redis-server did not answer within 5 s");
}

void RedisServer::stop() {
  if (m_pid <= 0)
    return;
  ::kill(m_pid, SIGKILL);
  ::waitpid(m_pid, nullptr, 0);
  m_pid = -1;
}

} // namespace jitcache::test
