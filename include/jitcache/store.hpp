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

  /// Like get(), without a copy where the store can avoid one: runs `use` on the entry in place
  /// (the view lives only during the call) and says whether there was one to run it on. An entry
  /// failing verification is not handed to `use` (a miss, as in get()). `use` must not call this
  /// store. The default reads with get() and hands over a view of the copy.
  virtual Expected<bool> visit(const Digest& key, const std::function<void(const EntryView&)>& use);

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
