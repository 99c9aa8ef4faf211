#include "tools/jitcache/backend_table.hpp"
#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/record_file.hpp"

#include "core/engine/store_handover.hpp"
#include "core/record/request_record.hpp"
#include "core/support/clock.hpp"
#include "core/support/log.hpp"
#include "core/support/regular_file.hpp"

#include <jitcache/cache.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace jitcache::cli {

using detail::Backend;
using detail::BuildRequest;

namespace {

// The device of `backend` on which `request` has the key `digest`, with that key; nullopt when
// none has it (the files, the device or jitcache changed since the request was made).
std::optional<std::pair<int, Key>> device_with_key(Backend& backend, const Config& config,
                                                   BuildRequest request,
                                                   const std::string& digest) {
  for (request.device = 0;; ++request.device) {
    auto key = backend.key(config, request);
    if (!key)
      return std::nullopt; // past the last device, or the request cannot be keyed at all
    if (key->digest.hex() == digest)
      return std::make_pair(request.device, std::move(*key));
  }
}

// Stores one handed-over request under `config`; the JSON line that says what happened.
nlohmann::json store_one(const Config& config, const detail::RequestRecord& record) {
  nlohmann::json line = {{"key", record.key}, {"backend", record.backend}};
  const auto dropped = [&](const std::string& why) {
    line["outcome"] = "dropped";
    line["why"] = why;
    return line;
  };
  auto backend = find_backend(record.backend);
  if (!backend)
    return dropped(backend.error().message);
  if (::chdir(record.directory.c_str()) != 0)
    return dropped("cannot enter " + record.directory + ": " + std::strerror(errno));
  if (record.options.size() != 1)
    return dropped("not an OpenCL request: its options are not one string");
  BuildRequest request{record.name, record.source,    record.options.front(), 0,
                       "",          record.compile_ns};
  auto found = device_with_key(**backend, config, request, record.key);
  if (!found)
    return dropped("no device gives the request's key any more (its files changed?)");
  request.device = found->first;
  line["device"] = request.device;
  Cache cache(config);
  if (auto present = cache.lookup(found->second)) {
    line["outcome"] = "present";
    line["bytes"] = present->entry.payload.size();
    return line;
  }
  auto bytes = (*backend)->store(cache, request, found->second);
  if (!bytes)
    return dropped(bytes.error().message);
  line["outcome"] = "stored";
  line["bytes"] = *bytes;
  return line;
}

// `store --detach`: the process that handed its stores over waits for this one only until it
// has forked; the child, re-parented to init once this one exits, gives way to any other work
// of the machine. false when fork failed (the caller then stores in its own process).
bool detach() {
  const pid_t child = ::fork();
  if (child < 0)
    return false;
  if (child > 0)
    ::_exit(0);
  ::setpriority(PRIO_PROCESS, 0, 19);
  sched_param param{};
  ::sched_setscheduler(0, SCHED_IDLE, &param);
  // ioprio_set(IOPRIO_WHO_PROCESS, self, IOPRIO_CLASS_IDLE): no glibc wrapper.
  ::syscall(SYS_ioprio_set, 1, 0, 3 << 13);
  return true;
}

constexpr std::size_t k_batch = 64; // request files one run takes
constexpr std::uint64_t k_max_request_file = 64ull << 20;
constexpr auto k_unfinished = std::chrono::hours(1); // a FILE.taken or FILE.part left behind
constexpr auto k_expired = std::chrono::hours(24);   // a FILE.jsonl no process took

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The request files of the pending folder `dir_fd` to take next: at most k_batch `*.jsonl`
// not `tried` already, newest first (the file of the hand-over that started this process is
// among the newest).
// Cleans the folder on the way: removes what has one of its names and is not a regular file
// (a symlink, a FIFO, a device; a directory if empty), a `*.taken` or `*.part` left for an hour
// (a store process that died, maybe of one of its requests: each request is tried once; a
// hand-over that died mid-write), and a `*.jsonl` left for a day (a backlog no run took: its
// requests are missed and handed over again by the next run that asks for them).
std::vector<std::string> take_from(int dir_fd, const std::string& folder,
                                   const std::set<std::string>& tried = {}) {
  std::vector<std::pair<std::int64_t, std::string>> found; // (age in ns, name)
  const int list_fd = ::dup(dir_fd);
  DIR* dir = list_fd < 0 ? nullptr : ::fdopendir(list_fd);
  if (!dir) {
    if (list_fd >= 0)
      ::close(list_fd);
    std::cerr << "jitcache: warning: cannot list " << folder << ": " << std::strerror(errno)
              << "\n";
    return {};
  }
  // The duplicate shares the folder's read position with `dir_fd`: a worker lists it again and
  // again, each time from its start.
  ::rewinddir(dir);
  const std::int64_t now_ns = detail::clock().wall_ns();
  const auto age_of = [&](const struct stat& st) {
    return std::chrono::nanoseconds(now_ns -
                                    (st.st_mtim.tv_sec * 1'000'000'000ll + st.st_mtim.tv_nsec));
  };
  while (const dirent* item = ::readdir(dir)) {
    const std::string name = item->d_name;
    const bool request = ends_with(name, ".jsonl");
    if (!request && !ends_with(name, ".taken") && !ends_with(name, ".part"))
      continue;
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (!S_ISREG(st.st_mode))
      ::unlinkat(dir_fd, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
    else if (age_of(st) > (request ? k_expired : k_unfinished))
      ::unlinkat(dir_fd, name.c_str(), 0);
    else if (request && tried.count(name) == 0)
      found.emplace_back(std::chrono::nanoseconds(age_of(st)).count(), name);
  }
  ::closedir(dir);
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (std::size_t i = 0; i < found.size() && i < k_batch; ++i)
    names.push_back(found[i].second);
  return names;
}

// How many request files of the pending folder `dir_fd` a store worker has taken and not yet
// done (`*.taken`); for `store --wait`'s messages only.
std::size_t taken_files(int dir_fd) {
  const int list_fd = ::dup(dir_fd);
  DIR* dir = list_fd < 0 ? nullptr : ::fdopendir(list_fd);
  if (!dir) {
    if (list_fd >= 0)
      ::close(list_fd);
    return 0;
  }
  ::rewinddir(dir);
  std::size_t taken = 0;
  while (const dirent* item = ::readdir(dir))
    taken += ends_with(item->d_name, ".taken");
  ::closedir(dir);
  return taken;
}

// A request file read and held: `fd` locked (empty when another store process has it),
// `bytes` its content, `done_with` its name once marked taken.
struct Taken {
  std::optional<int> fd;
  std::string bytes;
  std::string done_with;
};

// Takes the request file `name` (relative to `dir_fd`): a regular file only, opened without
// blocking or following a symlink, of at most k_max_request_file bytes, locked (one process a
// file: another `jitcache store` that has it is doing the same work) and still the file of
// that name once locked (one that another process took and removed while this one waited is
// left). Once read it is marked taken with `remove` (FILE.jsonl becomes FILE.taken, kept until
// its requests are done), before any request is made: a request that crashes this process (a
// runtime's fault) is tried once, not again by every later store process, and never keeps the
// other requests of later runs from being stored. Errors: io_error, the reason only.
Expected<Taken> take(int dir_fd, const std::string& name, bool remove) {
  struct stat st {};
  auto fd = detail::open_regular_file(name, O_RDONLY, 0, &st, dir_fd);
  if (!fd)
    return std::move(fd).error();
  Taken taken;
  struct stat now {};
  if (::flock(*fd, LOCK_EX | LOCK_NB) != 0 ||
      ::fstatat(dir_fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 || now.st_ino != st.st_ino ||
      now.st_dev != st.st_dev) {
    ::close(*fd);
    return taken;
  }
  if (static_cast<std::uint64_t>(st.st_size) > k_max_request_file) {
    ::unlinkat(dir_fd, name.c_str(), 0);
    ::close(*fd);
    return Error(ErrorCode::io_error, std::to_string(st.st_size) + " bytes, over the limit of " +
                                          format_size(k_max_request_file) + "; removed");
  }
  taken.fd = *fd;
  char buffer[1 << 16];
  while (taken.bytes.size() < k_max_request_file) {
    const ssize_t n = ::read(*fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    taken.bytes.append(buffer, static_cast<std::size_t>(n));
  }
  taken.done_with = name;
  if (remove) {
    const std::string marked =
        name.substr(0, name.size() - (ends_with(name, ".jsonl") ? 6 : 0)) + ".taken";
    if (::renameat(dir_fd, name.c_str(), dir_fd, marked.c_str()) == 0)
      taken.done_with = marked;
  }
  return taken;
}

// What a person recognises a request by while it is stored: the source file it was built from
// (`jitcache build`'s), else its key.
std::string label(const detail::RequestRecord& record) {
  return record.name.empty() ? record.backend + " request " + record.key.substr(0, 16)
                             : record.name;
}

// Called with each request before it is made (see store_file).
using Starting = std::function<void(const detail::RequestRecord&)>;

// Makes the requests of the request file `name` (relative to `dir_fd`; `file` names it), one
// line each on `out`, calling `starting` (when set) before each; a line that is no request is
// dropped, naming its number. 1 when the file cannot be read, is no request file, or had such a
// line, else 0 (also when another process has it).
int store_file(const Config& config, int dir_fd, const std::string& name, const std::string& file,
               bool remove, const Output& out, const Starting& starting = {}) {
  auto taken = take(dir_fd, name, remove);
  if (!taken)
    return fail(Error(ErrorCode::io_error, "cannot read " + file + ": " + taken.error().message));
  if (!taken->fd)
    return 0; // another `jitcache store` has it, or had it
  const std::string& bytes = taken->bytes;
  int status = 0;
  if (auto ok = check_record_start(file, bytes); !ok) {
    status = fail(ok.error());
  } else {
    std::size_t at = 0;
    for (std::size_t number = 1; at < bytes.size(); ++number) {
      std::size_t end = bytes.find('\n', at);
      if (end == std::string::npos)
        end = bytes.size();
      const std::string_view text(bytes.data() + at, end - at);
      at = end + 1;
      if (text.empty())
        continue;
      auto record = detail::decode_request(text);
      if (record && starting)
        starting(*record);
      nlohmann::json line = record ? store_one(config, *record)
                                   : nlohmann::json{{"outcome", "dropped"},
                                                    {"why", "line " + std::to_string(number) +
                                                                ": " + record.error().message}};
      if (!record)
        status = 1;
      line["file"] = file;
      std::string summary = line.value("key", std::string("?")).substr(0, 16) + ": " +
                            line["outcome"].get<std::string>();
      if (line.contains("why"))
        summary += " (" + line["why"].get<std::string>() + ")";
      out.emit(line, summary);
    }
  }
  // Removed while still locked, so no other `jitcache store` starts on it.
  if (remove)
    ::unlinkat(dir_fd, taken->done_with.c_str(), 0);
  ::close(*taken->fd);
  return status;
}

// The pending folder of a cache, opened; `lock` its worker lock, opened (not locked).
struct Pending {
  std::string folder;
  int dir_fd = -1;
  int lock = -1;
  ~Pending() {
    if (lock >= 0)
      ::close(lock);
    if (dir_fd >= 0)
      ::close(dir_fd);
  }
};

Expected<void> open_pending(const std::filesystem::path& folder, Pending& pending) {
  pending.folder = folder.string();
  pending.dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (pending.dir_fd < 0)
    return Error(ErrorCode::io_error,
                 "cannot open " + folder.string() + ": " + std::strerror(errno));
  auto lock = detail::open_worker_lock(pending.dir_fd);
  if (!lock)
    return Error(ErrorCode::io_error, folder.string() + ": " + lock.error().message);
  pending.lock = *lock;
  return {};
}

// Says who holds the worker lock (for `store --wait`): this process's pid, while it holds it,
// and on a second line what it is storing (`what`, when given). Only words for `store --wait` to
// print, so a failed write is a debug line: the lock itself is the flock, not these bytes.
void write_pid(int lock, const std::string& what = {}) {
  const std::string pid = std::to_string(::getpid()) + "\n" + (what.empty() ? "" : what + "\n");
  if (::ftruncate(lock, 0) != 0 ||
      ::pwrite(lock, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    log::debug(std::string("store: cannot write the worker's pid: ") + std::strerror(errno));
}

// What a worker wrote into its lock (write_pid): its pid and what it is storing; each empty
// when not said (a worker of an older jitcache writes its pid only).
struct Holder {
  std::string pid;
  std::string storing;
};
Holder holder(int lock) {
  char buffer[4096] = {};
  const ssize_t n = ::pread(lock, buffer, sizeof buffer - 1, 0);
  const std::string text(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
  const std::size_t end = text.find('\n');
  Holder out;
  out.pid = text.substr(0, end);
  if (out.pid.empty() || out.pid.size() >= 10 ||
      out.pid.find_first_not_of("0123456789") != std::string::npos)
    return {};
  if (end != std::string::npos && text.find('\n', end + 1) != std::string::npos)
    out.storing = text.substr(end + 1, text.find('\n', end + 1) - end - 1);
  return out;
}

// With the worker lock of `pending` held: stores every request file of the folder, batch after
// batch, each file tried once, until none is left to take; then lets go of the lock and lists
// the folder once more, since a hand-over that found the lock held between this process's last
// listing and its unlock started nothing: when a file is there, takes the lock again and goes
// on (when another process has it by then, that one lists the folder after taking it). Returns
// 1 when a file could not be read, else 0; `others` is set when it ended because another
// process took the lock. Each request is named in the lock before it is made (for `store
// --wait` in another process) and, when `say` (`store --wait` storing in the foreground, on a
// terminal), on stderr.
int drain(const Config& config, const Pending& pending, const Output& out, bool* others,
          bool say = false) {
  std::set<std::string> tried;
  int status = 0;
  const Starting starting = [&](const detail::RequestRecord& record) {
    write_pid(pending.lock, label(record));
    if (say)
      std::cerr << "jitcache: storing " << label(record) << "\n";
  };
  for (;;) {
    write_pid(pending.lock);
    for (std::vector<std::string> names;
         !(names = take_from(pending.dir_fd, pending.folder, tried)).empty();)
      for (const std::string& name : names) {
        tried.insert(name);
        status |= store_file(config, pending.dir_fd, name, pending.folder + "/" + name, true, out,
                             starting);
      }
    if (::ftruncate(pending.lock, 0) != 0)
      log::debug(std::string("store: cannot clear the worker's pid: ") + std::strerror(errno));
    ::flock(pending.lock, LOCK_UN);
    if (take_from(pending.dir_fd, pending.folder, tried).empty())
      return status;
    if (::flock(pending.lock, LOCK_EX | LOCK_NB) != 0) {
      if (others)
        *others = true;
      return status;
    }
  }
}

// The settings a store runs with: this process's (a hand-over passes the requester's in the
// environment), never a request's, the cache `cache_dir` when given.
Config store_config(const Config& environment) {
  std::map<std::string, std::string> variables = environment.variables;
  variables.erase("JITCACHE_RECORD"); // the stores are not requests of an application
  variables["JITCACHE_OPENCL_STORE"] = "wait";
  return Config::from_variables(variables);
}

} // namespace

int run_store(const Config& environment, const std::vector<std::string>& files,
              const std::string& pending, bool remove, bool detach_first, const Output& out) {
  if (files.empty() && pending.empty())
    return usage_error("store: no FILE and no --pending folder");
  Config config = store_config(environment);
  int status = 0;
  if (!pending.empty()) {
    // The one store worker of the cache: the lock is taken before detaching, so a process that
    // finds it held (another worker is alive and takes this hand-over's file) ends at once,
    // forking nothing; the child inherits it.
    const std::filesystem::path folder = std::filesystem::absolute(pending);
    config.cache_dir = folder.parent_path();
    Pending opened;
    if (auto ok = open_pending(folder, opened); !ok)
      return fail(ok.error());
    if (::flock(opened.lock, LOCK_EX | LOCK_NB) != 0)
      return 0; // another worker is alive
    if (detach_first && !detach())
      return fail(Error(ErrorCode::runtime_error,
                        std::string("cannot detach: fork: ") + std::strerror(errno)));
    status = drain(config, opened, out, nullptr);
  } else if (detach_first && !detach()) {
    return fail(Error(ErrorCode::runtime_error,
                      std::string("cannot detach: fork: ") + std::strerror(errno)));
  }
  for (const std::string& file : files) {
    const std::string name = std::filesystem::absolute(file).string();
    status |= store_file(config, AT_FDCWD, name, name, remove, out);
  }
  return status;
}

int run_store_wait(const Config& environment, const std::string& pending_dir, double timeout,
                   const Output& out) {
  if (environment.cache_dir.empty() && pending_dir.empty())
    return fail(Error(ErrorCode::invalid_argument, "store --wait: no cache directory"));
  if (environment.read_only)
    return fail(Error(ErrorCode::read_only,
                      "store --wait: JITCACHE_READONLY is set; no store can be made"));
  detail::Clock& clock = detail::clock();
  const auto start = clock.steady();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(clock.steady() - start).count();
  };
  const std::filesystem::path folder = pending_dir.empty() ? environment.cache_dir / "pending"
                                                           : std::filesystem::absolute(pending_dir);
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0 && errno == ENOENT) {
    out.emit({{"pending", 0}, {"waited_s", 0.0}}, "no pending stores");
    return 0;
  }
  Config config = store_config(environment);
  config.cache_dir = folder.parent_path();
  Pending pending;
  if (auto ok = open_pending(folder, pending); !ok)
    return fail(ok.error());
  int status = 0;
  double reported = 0;
  for (;;) {
    if (::flock(pending.lock, LOCK_EX | LOCK_NB) == 0) {
      // No worker alive: the stores left are made here, in the foreground.
      bool others = false;
      status |= drain(config, pending, out, &others, ::isatty(STDERR_FILENO) != 0);
      if (!others)
        break;
      continue; // another process took the lock meanwhile: wait for it
    }
    const double waited = elapsed();
    // What is left, said only in a message: listing the folder (which cleans it) every 50 ms
    // would repeat work the worker does anyway. The files the worker took (FILE.taken) count:
    // it is storing them.
    const auto left = [&] {
      const std::size_t n = take_from(pending.dir_fd, pending.folder).size();
      const std::size_t taken = taken_files(pending.dir_fd);
      return (n == k_batch ? std::string("64 or more") : std::to_string(n + taken)) +
             " request files pending" +
             (taken ? " (" + std::to_string(taken) + " being stored)" : std::string());
    };
    const auto [pid, storing] = holder(pending.lock);
    const std::string worker = "the store worker" + (pid.empty() ? "" : " (pid " + pid + ")");
    const std::string doing = storing.empty() ? "" : ", storing " + storing;
    // Someone waits for the worker now: it leaves the idle classes, so that a busy machine does
    // not starve it (its nice value stays 19; a process of the same user may do this).
    if (!pid.empty() && ::sched_getscheduler(std::stoi(pid)) == SCHED_IDLE) {
      sched_param param{};
      ::sched_setscheduler(std::stoi(pid), SCHED_OTHER, &param);
      // ioprio_set(IOPRIO_WHO_PROCESS, pid, IOPRIO_CLASS_BE, lowest level): no glibc wrapper.
      ::syscall(SYS_ioprio_set, 1, std::stoi(pid), (2 << 13) | 7);
    }
    if (timeout > 0 && waited >= timeout)
      return fail(Error(ErrorCode::runtime_error, "store --wait: " + worker + " still runs after " +
                                                      std::to_string(static_cast<long>(timeout)) +
                                                      " s, with " + left() + " in " +
                                                      pending.folder));
    if (waited - reported >= (reported == 0 ? 1.0 : 5.0)) {
      reported = waited;
      std::cerr << "jitcache: waiting for " << worker << doing << ": " << left() << " ("
                << static_cast<long>(waited) << " s)\n";
    }
    clock.sleep_for(std::chrono::milliseconds(50));
  }
  out.emit({{"pending", 0}, {"waited_s", elapsed()}},
           "every pending store is done (" + std::to_string(static_cast<long>(elapsed())) + " s)");
  return status;
}

} // namespace jitcache::cli
