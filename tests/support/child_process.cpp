#include "tests/support/child_process.hpp"

#include "core/support/log.hpp"
#include "core/tiers/user/lmdb_store.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

namespace jitcache::test {

using detail::LmdbStore;

namespace {
int g_to_parent = -1; // in a child: the write end of its message pipe
} // namespace

bool private_mounts() {
  return ::unshare(CLONE_NEWNS) == 0 &&
         ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
}

ChildProcess::ChildProcess(const std::function<int()>& body) {
  int messages[2], err[2];
  if (::pipe2(messages, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  m_pid = ::fork();
  if (m_pid < 0)
    throw std::runtime_error("fork failed");
  if (m_pid == 0) {
    ::close(messages[0]);
    ::close(err[0]);
    ::dup2(err[1], 2);
    g_to_parent = messages[1];
    log::forget_said_once(); // it warns as a new process would, whatever tests ran before
    int status = 1;
    try {
      status = body();
    } catch (...) {
      status = 99;
    }
    ::_exit(status); // no atexit handlers: they belong to the parent's test run
  }
  ::close(messages[1]);
  ::close(err[1]);
  m_messages = messages[0];
  m_stderr = err[0];
}

ChildProcess::~ChildProcess() {
  if (!m_status) {
    kill(SIGKILL);
    wait();
  }
  if (m_messages >= 0)
    ::close(m_messages);
}

void ChildProcess::tell_parent(const std::string& message) {
  const std::string line = message + "\n";
  if (::write(g_to_parent, line.data(), line.size()) < 0)
    ::_exit(98);
}

std::optional<std::string> ChildProcess::next_message() {
  for (;;) {
    if (const auto nl = m_pending.find('\n'); nl != std::string::npos) {
      std::string line = m_pending.substr(0, nl);
      m_pending.erase(0, nl + 1);
      return line;
    }
    char buf[256];
    const ssize_t n = ::read(m_messages, buf, sizeof buf);
    if (n <= 0)
      return std::nullopt;
    m_pending.append(buf, static_cast<std::size_t>(n));
  }
}

void ChildProcess::kill(int signal) {
  if (!m_status)
    ::kill(m_pid, signal);
}

int ChildProcess::wait() {
  if (m_status)
    return *m_status;
  char buf[4096];
  for (ssize_t n; (n = ::read(m_stderr, buf, sizeof buf)) > 0;)
    m_err.append(buf, static_cast<std::size_t>(n));
  ::close(m_stderr);
  m_stderr = -1;
  int status = 0;
  ::waitpid(m_pid, &status, 0);
  m_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return *m_status;
}

int run_cli_bounded(const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& env, unsigned seconds,
                    std::string* err) {
  ChildProcess child([&] {
    for (const auto& [name, value] : env)
      ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<std::string> all{JITCACHE_CLI};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : all)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::alarm(seconds);
    ::execv(argv[0], argv.data());
    return 127;
  });
  const int status = child.wait();
  if (err)
    *err = child.err();
  return status;
}

std::unique_ptr<ChildProcess> process_holding_user_tier(const std::filesystem::path& dir) {
  auto child = std::make_unique<ChildProcess>([dir] {
    auto store = LmdbStore::open(dir, false);
    ChildProcess::tell_parent(store ? "open" : "failed: " + store.error().message);
    ::pause();
    return 0;
  });
  if (child->next_message() != "open")
    throw std::runtime_error("the child could not open the user tier in " + dir.string());
  return child;
}

} // namespace jitcache::test
