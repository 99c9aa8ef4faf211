#pragma once

#include "core/engine/handle_cache.hpp"
#include "core/engine/runtime.hpp"
#include "core/key/manifest.hpp"

#include <jitcache/cache.hpp>

namespace jitcache::detail {

/// A request answered: the handle Runtime::load gave (or the compile, or the memory tier of
/// handles), and how it was obtained (total_ms included).
struct Answer {
  HandleCache::Handle handle;
  BuildInfo info;
};

/// The one path every request of every backend takes, in this order:
/// 1. the memory tier of handles, by a hash of the request's arguments and place (a repeated
///    request builds no key and reads no header);
/// 2. the compiler's identity as the user tier remembers it (no compiler opened), or probed;
/// 3. packages first: a key for each compiler identity the packages' entries for this target
///    were made with, so that a packaged binary is found without opening the compiler, or on a
///    machine without one;
/// 4. the remembered key: its entry is looked up and loaded before the stamps that prove the key
///    are checked (meanwhile, on a thread of their own, where Runtime::check_stamps_aside says so);
///    used only once proven, else dropped;
/// 5. the tier walk and, on a miss, the compile (CacheCore::obtain: single flight, leases,
///    stores), with the compiler checked against the identity the key was built with: when it
///    changed since it was remembered, the key is built again with what it really is (once);
/// 6. the request recorded (JITCACHE_RECORD); the handle kept for the next identical request.
/// Counted and reported in BuildInfo as CacheCore::obtain says; a request answered by the memory
/// tier of handles (or one that waited for another thread's load) is a memory hit.
/// Errors: the runtime's check(), select() and compile() errors; a fresh entry's refusal.
/// Thread-safe for distinct `runtime` objects.
Expected<Answer> serve_request(Cache& cache, Runtime& runtime);

/// The key of `runtime`'s request with the compiler this process opens (probed), built from
/// the files, for make_key() and `jitcache explain`: checks, probes, selects and builds; looks
/// nothing up and compiles nothing. Errors: those of check(), probe() and select().
Expected<Key> current_key(Runtime& runtime);

/// The key of `runtime`'s request as a hit takes it (steps 2 and 4): the compiler's remembered
/// identity, and the key remembered for the request when no file it was built from changed (no
/// header is read; the key has no `fields`, only `stored_fields`), else the key built from the
/// files (with its fields), remembered for the next process. Looks nothing up and compiles
/// nothing. Errors: those of check(), probe() and select().
Expected<Key> remembered_current_key(Cache& cache, Runtime& runtime);

/// Step 2 alone: the compiler identity keys are built with, as the user tier remembers it for
/// the runtime's library search (`*remembered` set; nothing is opened), else probed and then
/// remembered for the next process. Errors: the runtime's probe().
Expected<std::string> identity_for_keys(Cache& cache, Runtime& runtime, bool* remembered);

/// Step 4's key alone, for a runtime checked and select()ed with `identity` (which returned
/// `target`): a PendingKey whose guess() is the remembered key, if any, and which settles to the
/// key proven or built. The runtime must outlive the result.
PendingKey remembered_key(Cache& cache, Runtime& runtime, const std::string& identity,
                          const std::string& target);

} // namespace jitcache::detail
