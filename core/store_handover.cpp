#include "core/store_handover.hpp"

#include "core/fd_write.hpp"
#include "core/shared_library.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace jitcache::detail {

namespace {

Error io_error(const std::string& what, const fs::path& path, int err) {
  return Error(ErrorCode::io_error, what + " " + path.string() + ": " + std::strerror(err));
}

bool executable(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The detached grandchild: lowest priorities, no inherited streams or descriptors, then the
// worker. Only async-signal-safe calls: the parent may have had other threads.
[[noreturn]] void become_worker(const char* worker, char* const argv[]) {
  ::setpriority(PRIO_PROCESS, 0, 19);
  sched_param param{};
  ::sched_setscheduler(0, SCHED_IDLE, &param);
  // ioprio_set(IOPRIO_WHO_PROCESS, self, IOPRIO_CLASS_IDLE): no glibc wrapper.
  ::syscall(SYS_ioprio_set, 1, 0, 3 << 13);
  const int null = ::open("/dev/null", O_RDWR);
  if (null >= 0) {
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
  }
  for (int fd = 3; fd < 1024; ++fd)
    ::close(fd);
  ::execv(worker, argv);
  ::_exit(127);
}

// Request files of `pending` left for an hour: their process was killed before it finished
// (one still at work holds its file's lock, and the new process skips it).
std::vector<fs::path> stale_requests(const fs::path& pending) {
  constexpr auto k_stale = std::chrono::hours(1);
  std::vector<fs::path> stale;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (const auto& item : fs::directory_iterator(pending, ec)) {
    std::error_code time_ec;
    const auto written = item.last_write_time(time_ec);
    if (item.path().extension() == ".jsonl" && !time_ec && now - written > k_stale)
      stale.push_back(item.path());
  }
  return stale;
}

} // namespace

std::optional<fs::path> store_worker() {
  std::vector<fs::path> candidates;
  const LibraryFile self = library_file(reinterpret_cast<const void*>(&store_worker));
  if (!self.path.empty())
    candidates.push_back(fs::path(self.path).parent_path() / JITCACHE_LIB_TO_BIN / "jitcache");
  candidates.emplace_back(JITCACHE_BUILD_TREE_CLI);
  candidates.emplace_back(JITCACHE_INSTALLED_CLI);
  for (const fs::path& candidate : candidates)
    if (executable(candidate))
      return candidate.lexically_normal();
  return std::nullopt;
}

Expected<fs::path> hand_over(const fs::path& worker, const fs::path& pending,
                             const std::vector<RequestRecord>& requests) {
  if (::mkdir(pending.c_str(), 0700) != 0 && errno != EEXIST)
    return io_error("cannot create", pending, errno);
  struct stat st {};
  if (::lstat(pending.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Error(ErrorCode::io_error, pending.string() + " is not a directory");

  std::string bytes;
  for (const RequestRecord& record : requests)
    bytes += encode_request(record) + "\n";
  // A name no other process can pick: the pid, a counter, the clock.
  static std::atomic<unsigned> serial{0};
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const std::string stem = std::to_string(::getpid()) + "-" + std::to_string(serial++) + "-" +
                           std::to_string(now.tv_sec) + std::to_string(now.tv_nsec);
  const fs::path partial = pending / (stem + ".part");
  const fs::path file = pending / (stem + ".jsonl");
  const int fd =
      ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return io_error("cannot create", partial, errno);
  auto written = write_all(fd, bytes);
  ::close(fd);
  if (!written || ::rename(partial.c_str(), file.c_str()) != 0) {
    const int err = written ? errno : ENOSPC;
    ::unlink(partial.c_str());
    return io_error("cannot write", file, err);
  }

  // Everything the child needs is made before fork(): it must not allocate.
  std::string path = worker.string();
  std::vector<std::string> args{path, "store", "--remove", file.string()};
  for (const fs::path& stale : stale_requests(pending))
    args.push_back(stale.string());
  std::vector<char*> argv;
  for (std::string& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    const int err = errno;
    ::unlink(file.c_str());
    return Error(ErrorCode::runtime_error,
                 std::string("cannot start the store process: fork: ") + std::strerror(err));
  }
  if (child == 0) {
    ::setsid();
    const pid_t grandchild = ::fork();
    if (grandchild == 0)
      become_worker(path.c_str(), argv.data());
    ::_exit(grandchild < 0 ? 1 : 0);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ::unlink(file.c_str());
    return Error(ErrorCode::runtime_error, "cannot start the store process: fork failed");
  }
  return file;
}

} // namespace jitcache::detail
