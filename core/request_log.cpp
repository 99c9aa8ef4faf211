#include "core/request_log.hpp"

#include "core/fd_write.hpp"
#include "core/log.hpp"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace jitcache::detail {

namespace {

// Whether this process has not yet recorded `digest` in `file` (and now has).
bool first_time(const std::string& file, const std::string& digest) {
  static std::mutex mutex;
  static std::set<std::pair<std::string, std::string>> recorded;
  std::lock_guard<std::mutex> lock(mutex);
  return recorded.emplace(file, digest).second;
}

Expected<void> append_line(const std::string& file, const std::string& line) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return Error(ErrorCode::io_error, std::strerror(errno));
  // O_APPEND alone keeps a small write whole; the lock keeps large lines (sources, headers) and
  // the retries of a short write from interleaving with another process's.
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  auto written = write_all(fd, line);
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return written;
}

// Appends `line()` and a newline to the record, the first time this process records `id` there.
void record_once(const Config& config, const std::string& id,
                 const std::function<std::string()>& line) {
  if (config.record.empty())
    return;
  const std::string file = config.record.string();
  if (!first_time(file, id))
    return;
  if (auto written = append_line(file, line() + "\n"); !written)
    log::write_once(LogLevel::warn, "record:" + file,
                    "cannot append to the request record " + file + ": " + written.error().message +
                        "; this process records no requests there");
}

} // namespace

void record_request(const Config& config, const Key& key,
                    const std::function<RequestRecord()>& describe) {
  record_once(config, key.digest.hex(), [&] {
    RequestRecord record = describe();
    record.backend = key.backend;
    record.key = key.digest.hex();
    record.identity.clear();
    record.toolchain.clear();
    record.headers.clear();
    for (const KeyField& field : key.fields) {
      if (field.section == KeySection::device)
        record.identity[field.name] = field.value;
      else if (field.section == KeySection::toolchain)
        record.toolchain[field.name] = field.value;
      else if (field.section == KeySection::header)
        record.headers.push_back({field.name, field.value, field.detail});
    }
    return encode_request(record);
  });
}

void record_tuning_problem(const Config& config, const Digest& id,
                           const std::function<std::string()>& line) {
  record_once(config, "tuning:" + id.hex(), line);
}

} // namespace jitcache::detail
