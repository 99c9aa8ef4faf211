#pragma once

#include "core/tiers/user/cache_dir.hpp"

#include <jitcache/digest.hpp>
#include <jitcache/expected.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace jitcache::detail {

/// Who holds a compile lease, as the lease file records it (for messages and for expiry).
struct LeaseRecord {
  long pid = 0;
  std::string host;
  std::int64_t start_ms = 0;    ///< wall clock, milliseconds since the epoch
  std::int64_t expires_ms = 0;  ///< from then on, waiters take over
  std::uint32_t generation = 0; ///< bumped by every takeover from a holder that ran past its lease
};

/// The right to compile one key, across processes: the cross-process half of single flight
/// (SingleFlight is the in-process half). A lease is a file `<dir>/<key hex>` whose record says
/// who holds it (pid, host, start, expiry) and an open-file-description lock (F_OFD_SETLK) on
/// one byte per generation. The kernel drops the lock when its holder dies, so a waiter on the
/// same host takes over at once; a holder that is alive but has run past its lease is taken
/// over by one waiter, who locks the next generation's byte. The file is removed by the holder
/// when it lets go; files left by killed processes are reused, or removed by reap().
///
/// A lease involves no LMDB transaction: compiling under it never blocks a writer. The
/// directory must be on a local filesystem (the user tier's rule: see LmdbStore). Lease files
/// are opened, made and removed through the CacheDir (never through a symbolic link, never a
/// file with a second link: a record is never written anywhere else).
class CompileLease {
public:
  struct Options {
    /// How long a holder may compile before a waiter considers it hung and takes over.
    std::chrono::milliseconds duration = std::chrono::minutes(2);
    /// The longest pause between two looks at the lock and at `ready` (pauses start at 1 ms
    /// and double).
    std::chrono::milliseconds max_poll = std::chrono::milliseconds(100);
    /// How long to wait for another holder before giving up (acquire() then returns nullptr,
    /// as when `ready`); nullopt: as long as the holders' leases say.
    std::optional<std::chrono::milliseconds> max_wait;
  };

  /// Waits until either this process may compile `key` (returns the held lease: compile, store,
  /// then destroy it), or `ready()` returns true because another process stored the entry
  /// (returns nullptr). `ready` is called before waiting, between waits and once more after the
  /// lease is won (an entry stored just before). The wait is bounded by the holders' leases,
  /// and by Options::max_wait.
  /// Errors: io_error when no lease file can be made in `dir` (the caller then compiles without
  /// one).
  static Expected<std::unique_ptr<CompileLease>> acquire(const CacheDir& dir, const Digest& key,
                                                         const std::function<bool()>& ready,
                                                         const Options& options);

  /// Lets go: removes the lease file (when it is still this holder's) and unlocks. In a child
  /// after fork() it only closes its descriptor: the lock stays with the parent.
  ~CompileLease();
  CompileLease(const CompileLease&) = delete;
  CompileLease& operator=(const CompileLease&) = delete;

  /// The holder this lease was taken over from (it died, or ran past its lease); std::nullopt
  /// for a lease nobody held before.
  const std::optional<LeaseRecord>& taken_from() const { return m_taken_from; }

  /// The record of `key`'s lease file in `dir`, if there is one.
  static std::optional<LeaseRecord> read(const CacheDir& dir, const Digest& key);

  /// Marks `key` as compiled on this machine with its store handed over to a detached process
  /// (the file `<dir>/<key hex>.handed`): until the entry is stored, a process that misses the
  /// key builds it again over the runtime's own cache (PoCL's, warm from that compile), which
  /// is not a real compile. Best effort: a marker that cannot be made is not an error.
  static void mark_handed_over(const CacheDir& dir, const Digest& key);
  /// Whether `key` is marked as mark_handed_over() left it.
  static bool handed_over(const CacheDir& dir, const Digest& key);
  /// Removes `key`'s hand-over marker, once its entry is stored: from then on the marker would
  /// say that the runtime's cache is warm where it may not be (the entry evicted or cleared,
  /// the cache restored on another machine). Best effort, as marking.
  static void clear_handed_over(const CacheDir& dir, const Digest& key);

  /// Removes the lease files in `dir` that no live process holds (left by killed processes),
  /// and hand-over markers older than a day (their stores are done or lost). Safe while other
  /// processes use leases. Returns how many lease files were removed.
  static std::size_t reap(const CacheDir& dir);

private:
  CompileLease(CacheDir dir, std::string name, int fd, std::uint32_t generation);

  CacheDir m_dir;
  std::string m_name;
  int m_fd;
  std::uint32_t m_generation;
  unsigned m_fork_generation;
  std::optional<LeaseRecord> m_taken_from;
};

} // namespace jitcache::detail
