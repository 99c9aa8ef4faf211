#pragma once

#include <jitcache/digest.hpp>
#include <jitcache/entry.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/export.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace jitcache {

/// A place entries are kept (one tier). A miss is an empty optional; a failure is an Error;
/// the two never mix. Implementations are thread-safe.
class JITCACHE_EXPORT Store {
public:
  virtual ~Store() = default;

  /// Short tier name shown to users: "memory", "user", "system", "remote", ...
  virtual std::string name() const = 0;

  /// False when put/remove will always fail with ErrorCode::read_only.
  virtual bool writable() const = 0;

  /// Looks `key` up. Returns the entry (a copy the caller owns), std::nullopt on a miss
  /// (including an entry that failed verification: it is logged and treated as absent),
  /// or an Error when the store itself failed.
  virtual Expected<std::optional<Entry>> get(const Digest& key) = 0;

  /// What one visit() found for its key: said by the tier for that call alone, so a caller never
  /// blames one lookup for damage another thread found.
  struct Visit {
    enum class Outcome {
      miss,      ///< no entry (`use` did not run)
      hit,       ///< `use` ran on the entry
      damaged,   ///< an entry is there and fails verification; not handed to `use`
      untrusted, ///< an entry is there whose origin is not trusted (a remote value unsigned or
                 ///< wrongly signed); not handed to `use`
    };
    Outcome outcome = Outcome::miss;
    /// Why, with damaged or untrusted (for messages). Also set on a hit when the tier holds
    /// several copies (packages) and found one damaged before the intact one it handed over:
    /// damage to count, though the hit stands.
    std::string reason;

    static Visit miss() { return Visit{}; }
    static Visit hit() { return Visit{Outcome::hit, {}}; }
    static Visit damaged(std::string why) { return Visit{Outcome::damaged, std::move(why)}; }
    static Visit untrusted(std::string why) { return Visit{Outcome::untrusted, std::move(why)}; }
    /// Whether `use` ran (a hit): `if (*seen)` reads as it did when visit() returned a bool.
    explicit operator bool() const { return outcome == Outcome::hit; }
    /// Whether this call found damage to count (damaged, or a hit past a damaged copy).
    bool damage() const {
      return outcome == Outcome::damaged || (outcome == Outcome::hit && !reason.empty());
    }
  };

  /// Like get(), without a copy where the store can avoid one: runs `use` on the entry in place
  /// (the view lives only during the call) and says what it found: a hit (`use` ran), a miss, or
  /// an entry it would not hand over (damaged, untrusted) with the reason. A damaged entry is
  /// never handed to `use`. A tier may report one damaged entry as damaged once and as a miss
  /// afterwards, so that each is counted once however often it is read (the user tier and the
  /// packages do so per process; the remote reports it each time). `use` must not call this
  /// store. The default reads with get() (where damage is a miss) and hands over a view of the
  /// copy.
  virtual Expected<Visit> visit(const Digest& key,
                                const std::function<void(const EntryView&)>& use);

  /// Stores `entry` under `key`, replacing any entry there. Errors: read_only, store_full,
  /// io_error.
  virtual Expected<void> put(const Digest& key, const Entry& entry) = 0;

  /// Removes `key`. Returns whether an entry was there.
  virtual Expected<bool> remove(const Digest& key) = 0;

  /// Summary of one stored entry, for listing.
  struct Item {
    Digest key;
    std::string backend;
    std::uint64_t bytes = 0; ///< stored size, header included
    bool valid = true;       ///< false when the stored bytes fail verification
  };

  /// Calls `fn` for every entry (order unspecified). Entries are not copied out.
  /// `fn` must not call back into this store.
  virtual Expected<void> for_each(const std::function<void(const Item&)>& fn) = 0;
};

} // namespace jitcache
