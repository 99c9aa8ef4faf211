#include "tests/support/temp_dir.hpp"

#include "tests/support/files.hpp"
#include "tests/support/processes_naming.hpp"

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <signal.h>

namespace jitcache::test {

namespace {

namespace fs = std::filesystem;

// Whether process `pid` has ended: gone, or a zombie its parent has not reaped.
bool ended(pid_t pid) {
  const std::string stat = read_file(fs::path("/proc") / std::to_string(pid) / "stat");
  const auto state = stat.rfind(") ");
  return state == std::string::npos || stat.compare(state + 2, 1, "Z") == 0;
}

// Kills every other process whose arguments or environment name `dir` (a detached
// `jitcache store` a test handed its stores to, with the cache or PoCL's cache folder there), and
// waits up to 10 s for them to end: one still running once `dir` is removed would make it again.
// mkdtemp's names all have one length, so one TempDir's path is never part of another's.
void stop_processes_in(const fs::path& dir) {
  std::vector<pid_t> killed;
  for (pid_t pid : processes_naming(dir.string(), true))
    if (::kill(pid, SIGKILL) == 0)
      killed.push_back(pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (pid_t pid : killed)
    while (!ended(pid) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

} // namespace

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "jitcache-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("mkdtemp failed");
  m_path = pattern;
}

TempDir::~TempDir() {
  stop_processes_in(m_path);
  std::error_code ec;
  // Tests make directories read-only on purpose; give write access back before removing.
  for (auto it = fs::recursive_directory_iterator(m_path, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec))
    fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  fs::permissions(m_path, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(m_path, ec);
}

} // namespace jitcache::test
