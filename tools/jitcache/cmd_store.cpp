#include "tools/jitcache/backend_table.hpp"
#include "tools/jitcache/commands.hpp"

#include "core/request_record.hpp"

#include <jitcache/cache.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace jitcache::cli {

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

// Stores one handed-over request; the JSON line that says what happened.
nlohmann::json store_one(const detail::RequestRecord& record) {
  nlohmann::json line = {{"key", record.key}, {"backend", record.backend}};
  const auto dropped = [&](const std::string& why) {
    line["outcome"] = "dropped";
    line["why"] = why;
    return line;
  };
  auto backend = find_backend(record.backend);
  if (!backend)
    return dropped(backend.error().message);
  auto variables = record.variables;
  variables["JITCACHE_OPENCL_STORE"] = "wait";
  const Config config = Config::from_variables(variables);
  if (::chdir(record.directory.c_str()) != 0)
    return dropped("cannot enter " + record.directory + ": " + std::strerror(errno));
  if (record.options.size() != 1)
    return dropped("not an OpenCL request: its options are not one string");
  BuildRequest request{"", record.source, record.options.front(), 0, ""};
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

} // namespace

int run_store(const std::vector<std::string>& files, bool remove, bool detach_first,
              const Output& out) {
  if (detach_first && !detach())
    return fail(Error(ErrorCode::runtime_error,
                      std::string("cannot detach: fork: ") + std::strerror(errno)));
  int status = 0;
  std::vector<std::string> paths; // each request enters its own directory
  for (const std::string& file : files)
    paths.push_back(std::filesystem::absolute(file).string());
  for (const std::string& file : paths) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      status =
          fail(Error(ErrorCode::io_error, "cannot open " + file + ": " + std::strerror(errno)));
      continue;
    }
    // One process per file: another `jitcache store` that has it is doing the same work.
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      continue;
    }
    std::string bytes;
    char buffer[1 << 16];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        break;
      bytes.append(buffer, static_cast<std::size_t>(n));
    }
    // Marked taken once read, still locked, before any request is made (FILE.jsonl becomes
    // FILE.taken, kept until the requests are done): a request that crashes this process (a
    // runtime's fault) is tried once, not again by every later store process, and never keeps
    // the other requests of later runs from being stored. A taken file whose process died is
    // removed by a later hand-over (store_handover); what it did not store is missed again, and
    // handed over again, by the next run that asks for it.
    std::string done_with = file;
    if (remove) {
      const std::string taken = std::filesystem::path(file).replace_extension(".taken").string();
      if (::rename(file.c_str(), taken.c_str()) == 0)
        done_with = taken;
    }
    std::size_t at = 0;
    while (at < bytes.size()) {
      std::size_t end = bytes.find('\n', at);
      if (end == std::string::npos)
        end = bytes.size();
      const std::string_view text(bytes.data() + at, end - at);
      at = end + 1;
      if (text.empty())
        continue;
      auto record = detail::decode_request(text);
      nlohmann::json line =
          record ? store_one(*record)
                 : nlohmann::json{{"outcome", "dropped"}, {"why", record.error().message}};
      line["file"] = file;
      std::string summary = line.value("key", std::string("?")).substr(0, 16) + ": " +
                            line["outcome"].get<std::string>();
      if (line.contains("why"))
        summary += " (" + line["why"].get<std::string>() + ")";
      out.emit(line, summary);
    }
    // Removed while still locked, so no other `jitcache store` starts on it.
    if (remove)
      ::unlink(done_with.c_str());
    ::close(fd);
  }
  return status;
}

} // namespace jitcache::cli
