#pragma once

#include <jitcache/cache.hpp>
#include <jitcache/digest.hpp>

#include "core/engine/proven_stamps.hpp"
#include "core/engine/request_hash.hpp"
#include "core/engine/single_flight.hpp"
#include "core/key/file_stamp.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace jitcache::detail {

/// The memory tier of loaded runtime objects (cl_program, CUmodule, hipModule_t): one per
/// (key, context, device). A handle is a shared_ptr<void> whose deleter releases the runtime
/// object; handles live until the Cache is destroyed.
///
/// Requests whose key depends on nothing but their arguments are also remembered by a cheap
/// request hash (XXH3-128 over the raw arguments), so that a repeated identical request skips
/// key building entirely. What vouches for such a shortcut, the stamps of the files its key was
/// built from, is proven by stat at the first repeat and watched from the second, or later when
/// its files are few for their folders (ProvenStamps, its folders weighed): a repeat then costs one
/// ioctl(2) however many headers there are, and stats its files only after something they depend
/// on raised an event, or where they cannot be watched.
class HandleCache {
public:
  using Handle = std::shared_ptr<void>;

  /// Watching through the process's inotify instance (ProvenStamps::process_watch).
  HandleCache() : m_proven(ProvenStamps::process_watch(), 0, true) {}
  /// Watching through an instance of its own; `probe` tells FileWatch which filesystem a
  /// directory is on (tests pretend a network one).
  explicit HandleCache(FilesystemProbe probe) : m_proven(probe) {}

  struct Slot {
    Digest key;
    const void* context = nullptr;
    const void* device = nullptr;
    friend bool operator<(const Slot& a, const Slot& b) {
      return std::tie(a.key, a.context, a.device) < std::tie(b.key, b.context, b.device);
    }
  };

  /// What is remembered per loaded object.
  struct Loaded {
    Handle handle;
    BuildInfo info; ///< how it was first obtained (key, bytes)
  };

  std::optional<Loaded> find(const Slot& slot) const;
  /// The shortcut remembered for `request` (alias), when the files its key was built from are
  /// unchanged; nullopt otherwise (the caller builds the key again and aliases it anew).
  std::optional<Loaded> find(const RequestHash& request) const;
  void insert(const Slot& slot, const Loaded& loaded);
  /// Returns the handle for `slot`, or runs `load` once across concurrent callers (the others
  /// wait for it) and remembers a successful result. `ran` tells whether this caller ran it.
  Expected<Loaded> get_or_load(const Slot& slot, const std::function<Expected<Loaded>()>& load,
                               bool& ran);
  /// Remembers `request` as a shortcut to `loaded`, while the files its key was built from stay
  /// as `guards` describe them (see manifest_key): they are checked on every find(), so a header
  /// edited, or a file created that would now shadow one, during the process's life drops the
  /// shortcut and the request rebuilds its key. Without guards (files changed too recently to
  /// vouch for their content) nothing is remembered.
  void alias(const RequestHash& request, const Loaded& loaded, std::optional<std::string> guards);
  /// Forgets every handle (releasing the runtime objects not held elsewhere).
  void clear();
  /// How many find(RequestHash) calls had to stat the files of a shortcut (it was new, an event
  /// concerned its files, or they cannot be watched). For tests and benchmarks.
  std::uint64_t stat_checks() const;

private:
  mutable std::mutex m_mutex;
  std::map<Slot, Loaded> m_slots;
  struct Alias {
    Loaded loaded;
    std::string guards; ///< encode_stamps()
  };

  mutable std::map<RequestHash, Alias> m_requests;
  mutable ProvenStamps m_proven;
  SingleFlight<Slot, Expected<Loaded>> m_loads;
};

} // namespace jitcache::detail
