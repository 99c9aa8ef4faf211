#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace jitcache::test {

/// A loopback server that reads Redis commands and answers each as a test says, byte for byte:
/// for what a real redis-server cannot be made to send (malformed replies, endless SCAN cursors,
/// a connection closed or left silent mid-reply). Each connection has a thread of its own; the
/// destructor closes them all.
class ScriptedRedis {
public:
  /// What to do with one command.
  struct Reply {
    std::string bytes;  ///< sent as they are (possibly not the protocol at all)
    bool close = false; ///< then close the connection
    bool stall = false; ///< then send nothing more until the client closes it
  };
  /// Called for each command (its arguments, the name first), from the connection's thread.
  using Answer = std::function<Reply(const std::vector<std::string>& command)>;

  explicit ScriptedRedis(Answer answer);
  ~ScriptedRedis();
  ScriptedRedis(const ScriptedRedis&) = delete;
  ScriptedRedis& operator=(const ScriptedRedis&) = delete;

  int port() const { return m_port; }
  /// `redis://` + `credentials` + `127.0.0.1:PORT` + `query`.
  std::string url(const std::string& query = "", const std::string& credentials = "") const;
  /// Connections accepted and commands read so far.
  std::uint64_t connections() const { return m_connections; }
  std::uint64_t commands() const { return m_commands; }

  /// RESP encodings, for answers.
  static std::string bulk(const std::string& text);
  static std::string status(const std::string& text) { return "+" + text + "\r\n"; }
  static std::string error(const std::string& text) { return "-" + text + "\r\n"; }
  static std::string integer(long long n) { return ":" + std::to_string(n) + "\r\n"; }
  static std::string nil() { return "$-1\r\n"; }
  static std::string array(const std::vector<std::string>& encoded_items);

private:
  void serve(int fd);
  Answer m_answer;
  int m_listener = -1;
  int m_port = 0;
  std::atomic<bool> m_stopping{false};
  std::atomic<std::uint64_t> m_connections{0};
  std::atomic<std::uint64_t> m_commands{0};
  std::thread m_acceptor;
  std::mutex m_mutex;
  std::vector<std::thread> m_servers;
};

} // namespace jitcache::test
