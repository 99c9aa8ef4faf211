#include "core/record/request_log.hpp"

#include "core/support/clock.hpp"
#include "core/support/fd_write.hpp"
#include "core/support/log.hpp"
#include "core/support/regular_file.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
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

// How long a line waits for another process's lock on the record: a writer holds it for one
// line, and a party that holds it for ever (any reader of the file can) must not hang a build.
constexpr auto k_lock_wait = std::chrono::seconds(2);

Expected<void> append_line(const std::string& file, const std::string& line) {
  // A regular file only, opened without blocking: a FIFO (with or without a reader), a device
  // or a symlink is refused, never waited on.
  auto fd = open_regular_file(file, O_WRONLY | O_APPEND | O_CREAT);
  if (!fd)
    return std::move(fd).error();
  // O_APPEND alone keeps a small write whole; the lock keeps large lines (sources, headers) and
  // the retries of a short write from interleaving with another process's.
  detail::Clock& clock = detail::clock();
  const auto deadline = clock.steady() + k_lock_wait;
  while (::flock(*fd, LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || clock.steady() > deadline) {
      ::close(*fd);
      return Error(ErrorCode::io_error, "another process holds its lock");
    }
    clock.sleep_for(std::chrono::milliseconds(1));
  }
  auto written = write_all(*fd, line);
  ::flock(*fd, LOCK_UN);
  ::close(*fd);
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

void record_request(const Config& config, const Key& recorded,
                    const std::function<RequestRecord()>& describe,
                    const std::function<Key()>& full_key) {
  record_once(config, recorded.digest.hex(), [&] {
    std::optional<Key> built;
    if (recorded.fields.empty() && full_key)
      built = full_key();
    const Key& key = built ? *built : recorded;
    RequestRecord record = describe();
    record.backend = key.backend;
    // What changes the build and nothing else: the compile environment the key covers, never
    // jitcache's own settings (the remote tier's password and signing key among them) nor
    // locations of this machine.
    record.variables.clear();
    for (auto& [name, value] : config.compile_environment(key.backend))
      record.variables.emplace(std::move(name), std::move(value));
    record.key = key.digest.hex();
    record.identity.clear();
    record.toolchain.clear();
    record.headers.clear();
    for (const KeyField& field : all_fields(key)) {
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
