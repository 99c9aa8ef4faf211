#include "core/tiers/user/use_log.hpp"

#include "core/support/byte_io.hpp"
#include "core/support/flock_within.hpp"
#include "core/support/xxh3.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace jitcache::detail {

namespace {

constexpr std::string_view k_use_magic = "JCU1";
constexpr std::size_t k_use_frame =
    k_use_magic.size() + sizeof(std::uint32_t) + sizeof(std::uint64_t);
// A record holds one process's news: far below this. A length above it is damage.
constexpr std::uint32_t k_use_max_payload = std::uint32_t(64) << 20;
constexpr auto k_use_append_wait = std::chrono::milliseconds(1000);
constexpr auto k_use_fold_wait = std::chrono::milliseconds(100);

// The payload's news, or nothing when it does not parse to its end.
std::optional<UseNews> decode_use_payload(std::string_view in) {
  UseNews news;
  std::uint32_t counters = 0;
  if (!take_le(in, counters))
    return std::nullopt;
  for (std::uint32_t i = 0; i < counters; ++i) {
    std::string backend, name;
    std::uint64_t amount = 0;
    if (!take_sized<std::uint16_t>(in, backend) || !take_sized<std::uint16_t>(in, name) ||
        !take_le(in, amount))
      return std::nullopt;
    news.counters.by_backend[backend][name] += amount;
  }
  std::uint32_t uses = 0;
  if (!take_le(in, uses))
    return std::nullopt;
  for (std::uint32_t i = 0; i < uses; ++i) {
    Digest key;
    if (in.size() < key.bytes.size())
      return std::nullopt;
    std::memcpy(key.bytes.data(), in.data(), key.bytes.size());
    in.remove_prefix(key.bytes.size());
    AccessLog::Use use;
    if (!take_le(in, use.when_us) || !take_le(in, use.hits))
      return std::nullopt;
    news.uses.emplace_back(key, use);
  }
  if (!in.empty())
    return std::nullopt;
  return news;
}

// The descriptor of the log now named in `dir`, opened with `flags` and locked with
// `operation`: one opened before a fold removed it is let go and the new one opened. -1 with
// errno when there is none (ENOENT, without O_CREAT in `flags`), or when it cannot be opened or
// locked within `wait`.
int open_use_log_locked(const CacheDir& dir, int flags, int operation,
                        std::chrono::milliseconds wait) {
  for (int round = 0; round < 8; ++round) {
    auto fd = dir.open_file(k_use_log_name, flags);
    if (!fd)
      return -1;
    if (!flock_within(*fd, operation, wait)) {
      const int error = errno;
      ::close(*fd);
      errno = error == EWOULDBLOCK ? ETIMEDOUT : error;
      return -1;
    }
    struct stat held {};
    const auto named = dir.stat(k_use_log_name);
    if (::fstat(*fd, &held) == 0 && held.st_nlink == 1 && named && named->st_ino == held.st_ino &&
        named->st_dev == held.st_dev)
      return *fd;
    unlock_and_close(*fd); // removed by a fold meanwhile
  }
  errno = EAGAIN;
  return -1;
}

// The whole of what `fd` holds, from its start.
std::string read_use_log_bytes(int fd) {
  std::string bytes;
  char buffer[1 << 16];
  for (off_t at = 0;;) {
    const ssize_t got = ::pread(fd, buffer, sizeof buffer, at);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return bytes;
    bytes.append(buffer, static_cast<std::size_t>(got));
    at += got;
  }
}

} // namespace

std::string encode_use_record(const UseNews& news) {
  std::string payload;
  std::uint32_t counters = 0;
  for (const auto& [backend, named] : news.counters.by_backend)
    counters += static_cast<std::uint32_t>(named.size());
  append_le(payload, counters);
  for (const auto& [backend, named] : news.counters.by_backend)
    for (const auto& [name, amount] : named) {
      append_sized<std::uint16_t>(payload, backend);
      append_sized<std::uint16_t>(payload, name);
      append_le(payload, amount);
    }
  append_le(payload, static_cast<std::uint32_t>(news.uses.size()));
  for (const auto& [key, use] : news.uses) {
    payload.append(reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size());
    append_le(payload, use.when_us);
    append_le(payload, use.hits);
  }
  std::string record(k_use_magic);
  append_sized<std::uint32_t>(record, payload);
  append_le(record, xxh3_64(payload.data(), payload.size()));
  return record;
}

UseNews decode_use_log(std::string_view bytes) {
  UseNews sum;
  AccessLog uses;
  for (std::size_t at = bytes.find(k_use_magic); at != std::string_view::npos;
       at = bytes.find(k_use_magic, at)) {
    std::string_view rest = bytes.substr(at + k_use_magic.size());
    std::uint32_t size = 0;
    std::uint64_t check = 0;
    std::optional<UseNews> news;
    if (take_le(rest, size) && size <= k_use_max_payload &&
        rest.size() >= std::size_t(size) + sizeof check) {
      const std::string_view payload = rest.substr(0, size);
      rest.remove_prefix(size);
      take_le(rest, check);
      if (check == xxh3_64(payload.data(), payload.size()))
        news = decode_use_payload(payload);
    }
    if (!news) {
      ++at; // damaged or cut short: look for the next record
      continue;
    }
    sum.counters.merge(news->counters);
    uses.restore(news->uses);
    at += k_use_frame + size;
  }
  sum.uses = uses.take();
  return sum;
}

Expected<bool> append_use_log(const CacheDir& dir, const UseNews& news) {
  const std::string record = encode_use_record(news);
  const std::string path = (dir.path() / k_use_log_name).string();
  const int fd =
      open_use_log_locked(dir, O_WRONLY | O_APPEND | O_CREAT, LOCK_SH, k_use_append_wait);
  if (fd < 0)
    return Error(ErrorCode::io_error, "cannot append to " + path + ": " + std::strerror(errno));
  ssize_t wrote = -1;
  do
    wrote = ::write(fd, record.data(), record.size());
  while (wrote < 0 && errno == EINTR);
  const int error = wrote < 0 ? errno : ENOSPC;
  struct stat st {};
  const bool fold = ::fstat(fd, &st) == 0 && std::uint64_t(st.st_size) >= k_use_log_fold_at;
  unlock_and_close(fd);
  if (wrote != static_cast<ssize_t>(record.size()))
    return Error(error == ENOSPC || error == EDQUOT ? ErrorCode::store_full : ErrorCode::io_error,
                 "cannot append to " + path + ": " + std::strerror(error));
  return fold;
}

UseNews read_use_log(const CacheDir& dir, const std::function<void()>& beside) {
  const int fd =
      dir.stat(k_use_log_name) ? open_use_log_locked(dir, O_RDONLY, LOCK_SH, k_use_fold_wait) : -1;
  UseNews news = fd >= 0 ? decode_use_log(read_use_log_bytes(fd)) : UseNews{};
  beside();
  if (fd >= 0)
    unlock_and_close(fd);
  return news;
}

bool has_data_file(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(dir / "data.mdb", ec);
  return !ec && size > 0;
}

std::optional<Stats> logged_counters(const std::filesystem::path& dir) {
  // Without a log to read, whatever is counted is in the data file, if there is one.
  const auto unlogged = [&] {
    return has_data_file(dir) ? std::nullopt : std::optional<Stats>(Stats());
  };
  std::error_code ec;
  if (!std::filesystem::exists(dir / k_use_log_name, ec))
    return unlogged();
  auto cache = CacheDir::open(dir);
  if (!cache)
    return unlogged();
  bool tier = false;
  // Seen with the log held: a fold holds it exclusively and needs a data file, so a fold is then
  // either over (and the data file seen) or not begun (and the log's counters all there are).
  Stats counters = read_use_log(*cache, [&] { tier = has_data_file(dir); }).counters;
  if (tier)
    return std::nullopt;
  return counters;
}

Expected<LoggedDrop> drop_logged_counters(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir / k_use_log_name, ec))
    return has_data_file(dir) ? LoggedDrop::tier : LoggedDrop::nothing;
  auto cache = CacheDir::open(dir);
  if (!cache)
    return std::move(cache).error();
  TakenUseLog log = TakenUseLog::take(*cache);
  if (has_data_file(dir)) // seen with the log held, as in logged_counters()
    return LoggedDrop::tier;
  if (log.refused())
    return use_log_held_error(dir, "its counters were not dropped");
  if (!log.held())
    return LoggedDrop::nothing; // removed meanwhile (another zero), or not a log anyone reads
  if (!log.remove())
    return Error(ErrorCode::io_error, "cannot remove the use log " +
                                          (dir / k_use_log_name).string() + ": " +
                                          std::strerror(errno));
  return LoggedDrop::dropped;
}

TakenUseLog TakenUseLog::take(const CacheDir& dir) {
  TakenUseLog taken;
  if (!dir.stat(k_use_log_name))
    return taken;
  const int fd = open_use_log_locked(dir, O_RDONLY, LOCK_EX, k_use_fold_wait);
  if (fd < 0) {
    // Held past the wait (or swapped under every round), and still there; a log that is not a
    // regular file, or cannot be opened, holds no counters anyone reads.
    const bool held = errno == ETIMEDOUT || errno == EAGAIN;
    taken.m_refused = held && dir.stat(k_use_log_name).has_value();
    return taken;
  }
  taken.m_dir = dir;
  taken.m_fd = fd;
  taken.m_news = decode_use_log(read_use_log_bytes(fd));
  return taken;
}

TakenUseLog::TakenUseLog(TakenUseLog&& other) noexcept
    : m_dir(std::move(other.m_dir)), m_fd(other.m_fd), m_refused(other.m_refused),
      m_news(std::move(other.m_news)) {
  other.m_fd = -1;
}

TakenUseLog& TakenUseLog::operator=(TakenUseLog&& other) noexcept {
  if (this != &other) {
    release();
    m_dir = std::move(other.m_dir);
    m_fd = other.m_fd;
    m_refused = other.m_refused;
    m_news = std::move(other.m_news);
    other.m_fd = -1;
  }
  return *this;
}

TakenUseLog::~TakenUseLog() {
  release();
}

Error use_log_held_error(const std::filesystem::path& dir, const std::string& not_done) {
  return Error(ErrorCode::io_error,
               "the use log " + (dir / k_use_log_name).string() +
                   " is held by another process past the fold's wait (an append or a read, or one "
                   "stopped mid-way); " +
                   not_done + " (try again)");
}

bool TakenUseLog::remove() {
  // Still locked: no append lands in it from now on (open_use_log_locked).
  const bool removed = m_fd < 0 || m_dir.remove(k_use_log_name);
  const int error = errno;
  release();
  errno = error;
  return removed;
}

void TakenUseLog::release() {
  if (m_fd >= 0)
    unlock_and_close(m_fd);
  m_fd = -1;
  m_news = {};
}

} // namespace jitcache::detail
