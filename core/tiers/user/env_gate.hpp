#pragma once

#include "core/tiers/user/cache_dir.hpp"

#include <jitcache/expected.hpp>

#include <chrono>

namespace jitcache::detail {

/// The gate of an LMDB environment directory: a flock on `<dir>/gate` that every process holds
/// shared for as long as it has the environment open, and that moving the data file aside
/// (quarantine, compaction) needs exclusively. LMDB ties its lock file to its data file; with
/// the gate no process can ever pair an old lock file with a new data file, or keep using a
/// file that was replaced. Move-only; the destructor lets go: unlocking, then closing the
/// descriptor, in the process that entered; a forked child's copy is only closed (the child
/// shares the parent's hold through it, and must neither release it nor keep it past the
/// parent's release).
class EnvGate {
public:
  EnvGate() = default; ///< holds nothing
  EnvGate(EnvGate&& other) noexcept;
  EnvGate& operator=(EnvGate&& other) noexcept;
  EnvGate(const EnvGate&) = delete;
  EnvGate& operator=(const EnvGate&) = delete;
  ~EnvGate();

  /// Enters `dir`'s gate shared, waiting up to `wait` while another process holds it
  /// exclusively (a compaction). Creates the gate file (through CacheDir: never through a link)
  /// when `create` - a process that writes the directory - and it is absent; otherwise an absent
  /// gate gives a gate that holds nothing (a reader: it moves no file). The gate is opened
  /// read-only (flock needs no more), so a reader changes nothing. Errors: io_error (the wait ran
  /// out, or the gate is not a regular file or cannot be opened), naming the directory.
  static Expected<EnvGate> enter_shared(const CacheDir& dir, bool create,
                                        std::chrono::milliseconds wait);

  /// Enters `dir`'s gate exclusively now, or not at all (creating the gate file as enter_shared
  /// does): for work that replaces or removes the data file (compaction, clear). Errors:
  /// read_only "the cache directory is read-only" (no gate can be held), io_error "other
  /// processes have the user tier open", or enter_shared's.
  static Expected<EnvGate> enter_alone(const CacheDir& dir);

  /// Tries to trade a shared hold for an exclusive one, without waiting. Returns false when
  /// another process (or another descriptor in this process) holds the gate; the shared hold is
  /// then taken again, waiting up to `wait` as enter_shared does (if that runs out, the gate
  /// holds nothing afterwards: see held()).
  bool try_exclusive(std::chrono::milliseconds wait);

  /// Trades an exclusive hold back for a shared one (never waits).
  void share();

  /// Whether a gate file is held at all.
  bool held() const { return m_fd >= 0; }

private:
  explicit EnvGate(int fd);
  void let_go();
  int m_fd = -1;
  unsigned m_generation = 0; ///< the fork generation that entered
};

} // namespace jitcache::detail
