#pragma once

#include "tests/support/temp_dir.hpp"

#include <sys/types.h>

#include <optional>
#include <string>

namespace jitcache::test {

/// A real `redis-server` for a test: on 127.0.0.1 at a port that was free, in a directory of its
/// own, persisting nothing (`--save '' --appendonly no`), DEBUG allowed (for DEBUG SLEEP). The
/// destructor stops it. Tests call available() first and skip when the binary is absent.
class RedisServer {
public:
  RedisServer();
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  /// Whether a redis-server executable is installed.
  static bool available();

  /// Starts the server (again, on the same port after stop()) and waits until it answers PING.
  /// Throws std::runtime_error when it does not start.
  void start();
  /// Kills it (SIGKILL) and waits for it to exit: what it held is gone, as after a crash.
  void stop();
  int port() const { return m_port; }
  /// `redis://127.0.0.1:PORT` followed by `query` (e.g. "?timeout_ms=50").
  std::string url(const std::string& query = "") const;

private:
  TempDir m_dir;
  int m_port = 0;
  pid_t m_pid = -1;
};

} // namespace jitcache::test
