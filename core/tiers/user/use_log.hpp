#pragma once

#include "core/tiers/user/access_log.hpp"
#include "core/tiers/user/cache_dir.hpp"

#include <jitcache/expected.hpp>
#include <jitcache/stats.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace jitcache::detail {

/// What the use log tells the user tier: counters to add, and uses of entries (the latest time
/// and the hits of each).
struct UseNews {
  Stats counters;
  AccessLog::Batch uses;
  bool empty() const { return counters.by_backend.empty() && uses.empty(); }
};

/// The file `uses.log` in the user tier's folder: what a process that wrote nothing else tells
/// the tier (its counters, the uses of the entries it hit), appended instead of a write
/// transaction. Such a process (every hit-only run of a test suite, an edit-and-run loop, each
/// rank of a job) then never takes LMDB's writer lock, checks the data file's pages or syncs
/// the disk at exit; the next write transaction of any process folds the log into LMDB
/// (fold_use_log) and removes it.
///
/// Each append is one record in one write(2) to a file opened O_APPEND, under a shared flock:
///
///   4 bytes   "JCU1"
///   u32       length of the payload
///   payload   u32 count, then per counter: u16-sized backend, u16-sized name, u64 amount;
///             u32 count, then per use: 32-byte key, u64 last use (us), u64 hits
///   u64       XXH3-64 of the payload
///
/// little-endian. A record cut short (a full disk, a killed process) or damaged is skipped, and
/// reading goes on at the next "JCU1" that starts a whole record: damage loses the records it
/// touches, never more, and never reads as a count it did not have.

/// The log's name in the user tier's folder.
inline constexpr const char* k_use_log_name = "uses.log";

/// One record's bytes (exposed for the tests).
std::string encode_use_record(const UseNews& news);
/// The sum of the whole records in `bytes` (damaged ones skipped; see above).
UseNews decode_use_log(std::string_view bytes);

/// The log's size at which an append asks its caller to fold it (a write transaction).
inline constexpr std::uint64_t k_use_log_fold_at = std::uint64_t(256) << 10;

/// Appends `news` to the log in `dir` (made when absent, mode 0600, never through a link).
/// Returns whether the log has reached k_use_log_fold_at. Errors: io_error (the log cannot be
/// opened, is not a regular file, or its lock was not had within a second), store_full (a short
/// write: the disk is full; the partial record is skipped by readers). Safe from many threads
/// and processes at once, and against a fold running meanwhile (an append never lands in a log
/// already folded).
Expected<bool> append_use_log(const CacheDir& dir, const UseNews& news);

/// What the log in `dir` holds now (nothing when there is none, or when it cannot be read).
/// `beside` runs while the log is held (shared, after it is read; when there is no log, just
/// before the call returns): what it reads of the tier and what the log said are then of one
/// moment, a fold's news neither in both nor in neither.
UseNews read_use_log(const CacheDir& dir, const std::function<void()>& beside);

/// Whether the user tier in the folder `dir` has a data file that is not empty: an LMDB
/// environment, which a fold of the log needs (a full disk can leave an empty one behind).
bool has_data_file(const std::filesystem::path& dir);

/// The counters the log in the folder `dir` holds, for a user tier that has no data file yet (a
/// process whose requests packages served told them there: DeferredUserTier). Empty when the
/// folder or its log does not exist or cannot be read. nullopt when the tier has a data file by
/// the time the log is held (has_data_file): a fold may have taken the log's counters into it,
/// so the caller reads the tier instead.
std::optional<Stats> logged_counters(const std::filesystem::path& dir);

/// What drop_logged_counters() did.
enum class LoggedDrop {
  nothing, ///< no log, no data file: nothing is counted
  dropped, ///< the log's counters were dropped
  tier,    ///< the tier has a data file (has_data_file): the caller changes the tier instead
};

/// Drops the counters the log in the folder `dir` holds, for a user tier that has no data file
/// (zeroing or clearing it): the log, held exclusively, is removed once the tier is seen to have
/// no data file, so a process that makes the tier and folds the log meanwhile loses nothing.
/// Errors: io_error when there is a log that cannot be held (another process holds it past a
/// fold's wait: an append stopped mid-way) or removed (a read-only folder).
Expected<LoggedDrop> drop_logged_counters(const std::filesystem::path& dir);

/// The log held exclusively for a fold: made inside a write transaction (after LMDB's writer
/// lock: the only order in which the two locks are taken), applied to it, and removed once the
/// transaction committed. Empty when there is no log, or when its lock was not had within
/// 100 ms (an append stopped mid-way: the log waits for the next fold; refused() says so, for
/// the changes that must not leave its counters behind: zeroing, clearing). Move-only; the lock
/// is released when the object goes.
class TakenUseLog {
public:
  TakenUseLog() = default;
  /// Takes the log in `dir`.
  static TakenUseLog take(const CacheDir& dir);
  TakenUseLog(TakenUseLog&& other) noexcept;
  TakenUseLog& operator=(TakenUseLog&& other) noexcept;
  TakenUseLog(const TakenUseLog&) = delete;
  TakenUseLog& operator=(const TakenUseLog&) = delete;
  ~TakenUseLog();

  /// What the log held (empty news when nothing was taken).
  const UseNews& news() const { return m_news; }
  /// Whether a log was taken (and is held).
  bool held() const { return m_fd >= 0; }
  /// Whether there is a log that was not taken because another process held it past the wait.
  /// A log removed meanwhile is not one, nor one that is not a regular file or cannot be opened
  /// (it holds no counters anyone reads).
  bool refused() const { return m_refused; }
  /// Removes the log (its news are in the committed transaction). Appends waiting meanwhile go
  /// to a new log. Returns false when a log was held and could not be removed (a read-only
  /// folder); the lock is released either way.
  bool remove();

private:
  void release();

  CacheDir m_dir;
  int m_fd = -1;
  bool m_refused = false;
  UseNews m_news;
};

/// The error of a change that needs the log's counters (zeroing, clearing) when refused():
/// io_error naming the log in `dir` and what was `not_done`.
Error use_log_held_error(const std::filesystem::path& dir, const std::string& not_done);

} // namespace jitcache::detail
