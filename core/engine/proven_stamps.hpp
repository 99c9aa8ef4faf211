#pragma once

#include "core/engine/file_watch.hpp"
#include "core/support/fork_safe_mutex.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace jitcache::detail {

/// Proves sets of stamps (encode_stamps: the guards of a manifest, a remembered scan, a
/// shortcut) as unchanged() does, and remembers each set proven so that, while inotify
/// (FileWatch) reports nothing that concerns its files, proving it again is one ioctl(2) rather
/// than a stat per file: a process that builds or recalls many keys on the same thousand headers
/// (CuPy's kernels) stats them a few times, not once per kernel.
///
/// A set is watched at its `watch_from + 1`-th proof at the earliest, before that proof's stat
/// calls (a change made between the two is seen by one or the other), and proven by its watch
/// from then on. Watching costs about three system calls per folder on the set's paths (lstat,
/// statfs, inotify_add_watch) and two per file, a proof by stat one per file: with
/// `weigh_folders`, a set is also proven by stat until those proofs have made as many calls as
/// watching its folders would (a toolkit's hundreds of headers in a few dozen folders: at the
/// second proof; the four files of a compiler's identity under seven folders: at the seventh),
/// so that a process that proves a small set twice, or makes a request and its repeat, does not
/// pay a watch worth several proofs.
/// Where FileWatch declines (a network or FUSE filesystem, inotify's limits, a forked child), every
/// proof stats. Any event that concerns a watched file makes every watched set stat again, once.
/// Bounded: past k_sets sets or k_bytes of their stamps, the remembered sets are forgotten.
/// Thread-safe.
class ProvenStamps {
public:
  /// An inotify instance (FileWatch) that several ProvenStamps watch through, each call under
  /// its mutex. An event that concerns one's files makes the others stat theirs once more.
  struct Watch {
    explicit Watch(FilesystemProbe probe) : files(probe) {}
    ForkSafeMutex mutex;
    FileWatch files;
  };

  /// The process's instance: the process's sets and every Cache's request shortcuts watch through
  /// it, one of the 128 instances Linux gives a user by default, whatever the Caches.
  static const std::shared_ptr<Watch>& process_watch();

  /// Watching through `watch`. `watch_from`: the proofs by stat alone before a set is watched
  /// (watching costs several proofs, an lstat and an inotify_add_watch per file before the proof
  /// itself: a set proven once in a process should not pay it); `weigh_folders`: and until they
  /// have cost what watching the set's folders would (see the class comment).
  ProvenStamps(std::shared_ptr<Watch> watch, unsigned watch_from, bool weigh_folders);
  /// Watching through an instance of its own from the `watch_from + 1`-th proof, whatever the
  /// folders; `probe` tells which filesystem a directory is on (tests pretend a network one).
  explicit ProvenStamps(FilesystemProbe probe, unsigned watch_from = 0);

  /// The process's own, watching from a set's second proof, its folders weighed: what remembered
  /// scans, manifests and records are proven by.
  static ProvenStamps& process();

  /// Whether every stamp in `encoded` still describes its file (unchanged()).
  bool hold(std::string_view encoded);

  /// How many hold() calls stat'ed the files. For tests and benchmarks.
  std::uint64_t stat_checks() const;

private:
  static constexpr std::size_t k_sets = 1024;
  static constexpr std::size_t k_bytes = std::size_t(64) << 20;
  /// The calls watching costs per folder, in the units of a proof's stat per file.
  static constexpr std::size_t k_calls_per_folder = 3;
  struct Proven {
    std::string stamps;                      ///< the set, which its key in m_sets views
    unsigned proofs = 0;                     ///< by stat
    std::optional<unsigned> watch_at;        ///< the proofs by stat before it is watched
    std::optional<FileWatch::Ticket> ticket; ///< while watched
    bool unwatchable = false;                ///< FileWatch declined: stat each time
  };
  /// The proofs by stat before `set` is watched (computed once).
  unsigned watch_at(Proven& set) const;
  const unsigned m_watch_from;
  const bool m_weigh_folders;
  mutable ForkSafeMutex m_mutex; ///< taken before m_watch's
  const std::shared_ptr<Watch> m_watch;
  std::unordered_map<std::string_view, std::unique_ptr<Proven>> m_sets;
  std::size_t m_bytes = 0;
  std::uint64_t m_stat_checks = 0;
};

} // namespace jitcache::detail
