// LmdbStore: opening the environment (one per directory per process) and the entries in it.
#include "core/tiers/user/lmdb_store.hpp"

#include "core/support/fork_guard.hpp"
#include "core/support/fork_safe_mutex.hpp"
#include "core/support/log.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/user/eviction.hpp"
#include "core/tiers/user/lmdb_txn.hpp"

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace jitcache::detail {

namespace fs = std::filesystem;

namespace {

using EnvPlace = std::pair<dev_t, ino_t>; // a directory, by device and inode

// A directory's environment in this process. Closing an environment clears this process's
// reader slots in the lock file and drops every POSIX lock this process holds there (closing any
// descriptor of a file does), and so does a poisoned one giving up its locks: no environment for
// the same directory may be opened while one of these runs.
struct EnvSlot {
  std::weak_ptr<LmdbStore::Env> env; ///< its stores' handle
  /// The serial of the environment last made here until it has closed (its last handle
  /// dropped, then LMDB closed): nonzero while `env` is expired but the close still runs.
  std::uint64_t unclosed = 0;
  bool opening = false;    ///< a thread is making the next environment here
  unsigned generation = 0; ///< the fork generation `unclosed` and `opening` were set in
};

// The process's environments and the damage it found, made before main() and never destroyed
// (a store may be dropped during exit, after this file's statics are gone).
struct Registry {
  // One environment per directory per process (LMDB's rule). Held only for the slots, never
  // while an environment opens or closes (which may wait for a gate and writes warnings), so no
  // other ForkSafeMutex is ever taken with it held. A ForkSafeMutex: a child forked while
  // another thread opens or closes a tier opens its own.
  ForkSafeMutex mutex;
  std::map<EnvPlace, EnvSlot> envs;
  std::uint64_t serials = 0; ///< environments made
  // Entries found damaged and not written since, by directory: each is counted and warned
  // about once per process, however many paths read it (a request walks the tiers up to three
  // times before it compiles; CUDA's speculative serve() once more) and however often the
  // environment is opened again. Never taken with `mutex` held.
  ForkSafeMutex damaged_mutex;
  std::set<std::pair<std::string, Digest>> damaged;

  static Registry& process() {
    static Registry* const made = new Registry;
    return *made;
  }
};

[[maybe_unused]] const bool g_lmdb_store_made_before_main =
    (Registry::process(), true); // see ForkSafeMutex

// Whether `key` in `e` was not yet known to be damaged (now it is).
bool first_sight_of_damage(const LmdbStore::Env& e, const Digest& key) {
  Registry& registry = Registry::process();
  std::lock_guard<ForkSafeMutex> lock(registry.damaged_mutex);
  return registry.damaged.emplace(e.dir.string(), key).second;
}

// `key` was written or removed: damage found in it again is new damage.
void forget_damage(const LmdbStore::Env& e, const Digest& key) {
  Registry& registry = Registry::process();
  std::lock_guard<ForkSafeMutex> lock(registry.damaged_mutex);
  registry.damaged.erase({e.dir.string(), key});
}

// `env`, made for the directory at `place` with serial `serial`, owned so that the registry
// knows when it has closed: its last handle closes LMDB (outside the registry's lock), then
// clears the slot's `unclosed`.
std::shared_ptr<LmdbStore::Env> closing_known(std::shared_ptr<LmdbStore::Env> env, EnvPlace place,
                                              std::uint64_t serial) {
  LmdbStore::Env* raw = env.get();
  return std::shared_ptr<LmdbStore::Env>(
      raw, [owned = std::move(env), place, serial](LmdbStore::Env*) mutable {
        owned.reset();
        Registry& registry = Registry::process();
        std::lock_guard<ForkSafeMutex> lock(registry.mutex);
        EnvSlot& slot = registry.envs[place];
        if (slot.unclosed == serial) // serials are never reused, in a forked child either
          slot.unclosed = 0;
      });
}

// Whether an open of `slot` must wait, `env` being what its handle gives: another thread is
// making its environment, or the last one is still closing, or a poisoned one has not yet
// given up its locks. What a fork's parent was doing is not this process's.
bool must_wait(const EnvSlot& slot, const std::shared_ptr<LmdbStore::Env>& env) {
  const bool ours = slot.generation == fork_generation();
  if (env)
    return env->generation == fork_generation() && env->poisoned &&
           !env->given_up.load(std::memory_order_acquire);
  return ours && (slot.opening || slot.unclosed != 0);
}

} // namespace

Expected<std::shared_ptr<LmdbStore>> LmdbStore::open(const fs::path& dir, bool read_only,
                                                     const Options& options) {
  // Before anything is created there: LMDB's locks and shared map do not work across the
  // clients of a network filesystem.
  if (const Filesystem where = options.probed_local ? Filesystem{} : options.probe(dir);
      where.network)
    return Error(ErrorCode::unsupported, "cache directory " + dir.string() +
                                             " is on a network filesystem (" + where.name +
                                             "), where LMDB's locking is unsafe");
  auto cache = prepare_dir(dir, read_only);
  if (!cache)
    return std::move(cache).error();
  const struct stat& st = cache->status();
  const EnvPlace place{st.st_dev, st.st_ino};
  Registry& registry = Registry::process();
  std::shared_ptr<Env> env; // outside the lock: a last handle dropped here takes it
  std::uint64_t serial = 0;
  {
    std::unique_lock<ForkSafeMutex> lock(registry.mutex);
    EnvSlot& slot = registry.envs[place]; // a std::map's elements stay where they are
    // Rare, and as long as an open or a close: a poll is enough.
    while (env = slot.env.lock(), must_wait(slot, env)) {
      env.reset();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      lock.lock();
    }
    // A poisoned environment (see Env::poison) stays with the stores that have it; a new open
    // gets a fresh one, moving the damaged file aside when no other process has it open. Its
    // close leaves LMDB's handles and the lock file alone (Env::~Env).
    if (!env || env->generation != fork_generation() || env->poisoned) {
      slot.opening = true;
      slot.generation = fork_generation();
      serial = ++registry.serials;
    }
  }
  if (!serial) {
    if (env->read_only && !read_only)
      log::write_once(LogLevel::warn, "ro-shared:" + dir.string(),
                      "user tier " + dir.string() +
                          " is already open read-only in this process; using it read-only");
    return std::shared_ptr<LmdbStore>(new LmdbStore(env, read_only || env->read_only, options));
  }
  env.reset(); // a parent's, or a poisoned one: not this open's
  std::shared_ptr<Env> fresh;
  struct Opened { // the slot told how this open ended, however it ends
    Registry& registry;
    EnvPlace place;
    std::uint64_t serial;
    std::shared_ptr<Env>& fresh;
    ~Opened() {
      std::lock_guard<ForkSafeMutex> lock(registry.mutex);
      EnvSlot& slot = registry.envs[place];
      slot.opening = false;
      if (fresh) {
        slot.unclosed = serial;
        slot.env = fresh;
      }
    }
  } opened_here{registry, place, serial, fresh};
  // A data file over its bound (grown by a process with a larger limit or none, or before
  // there was a bound) is compacted, when no other process has it open: never waiting.
  Options bounded = options;
  if (options.max_size && !read_only) {
    bounded.map_size = std::min<std::uint64_t>(options.map_size, map_bound(*options.max_size));
    const auto data = cache->stat("data.mdb");
    if (data && std::uint64_t(data->st_size) > file_bound(*options.max_size))
      static_cast<void>(compact(dir)); // not done: freed pages are reused, evictions free more
  }
  auto opened = open_env(*cache, read_only, bounded);
  if (!opened)
    return std::move(opened).error();
  if (options.max_size && !read_only)
    (*opened)->max_size = *options.max_size;
  fresh = closing_known(std::move(*opened), place, serial);
  return std::shared_ptr<LmdbStore>(new LmdbStore(fresh, read_only, options));
}

LmdbStore::LmdbStore(std::shared_ptr<Env> env, bool read_only, Options options)
    : m_env(std::move(env)), m_read_only(read_only), m_options(std::move(options)) {}
LmdbStore::~LmdbStore() {
  // The last handle writes the uses recorded since the last write (best effort: they only
  // order eviction).
  if (m_env.use_count() == 1 && m_env->generation == fork_generation() && writes(*m_env) &&
      !m_env->uses.empty())
    static_cast<void>(tell_through_log(*m_env, {}));
}

std::shared_ptr<LmdbStore::Env> LmdbStore::env() {
  auto env = std::atomic_load(&m_env);
  if (env->generation == fork_generation())
    return env;
  // We are in a child of the process that opened it: open our own environment, or go on
  // with none (an empty, read-only stand-in), never with the parent's.
  std::shared_ptr<Env> fresh;
  if (auto reopened = open(env->dir, m_read_only, m_options)) {
    fresh = (*reopened)->m_env;
  } else {
    log::write_once(LogLevel::warn, "fork:" + env->dir.string(),
                    reopened.error().message +
                        "; this child process goes on without the user tier");
    fresh = std::make_shared<Env>();
    fresh->dir = env->dir;
    fresh->read_only = true;
    fresh->generation = fork_generation();
  }
  std::atomic_store(&m_env, fresh);
  return fresh;
}

bool LmdbStore::writes(const Env& env) const {
  return !m_read_only && !env.read_only;
}
bool LmdbStore::writable() const {
  return writes(*std::atomic_load(&m_env));
}
fs::path LmdbStore::dir() const {
  return std::atomic_load(&m_env)->dir;
}
Expected<CacheDir> LmdbStore::lease_dir() const {
  const auto env = std::atomic_load(&m_env);
  if (!env->cache.valid())
    return Error(ErrorCode::io_error, "no user tier in " + env->dir.string());
  return env->cache.subdir("leases", true);
}
std::optional<std::uint64_t> LmdbStore::max_size() const {
  return m_options.max_size;
}
Expected<std::optional<Entry>> LmdbStore::get(const Digest& key) {
  std::optional<Entry> found;
  auto seen = visit(key, [&](const EntryView& entry) { found = to_entry(entry); });
  if (!seen)
    return std::move(seen).error();
  return found;
}

Expected<Store::Visit> LmdbStore::visit(const Digest& key,
                                        const std::function<void(const EntryView&)>& use) {
  return read_entry(key, use, true);
}

Expected<Store::Visit> LmdbStore::peek(const Digest& key,
                                       const std::function<void(const EntryView&)>& use) {
  return read_entry(key, use, false);
}

Expected<Store::Visit> LmdbStore::read_entry(const Digest& key,
                                             const std::function<void(const EntryView&)>& use,
                                             bool hit) {
  auto e = env();
  if (!e->has_dbs)
    return Visit::miss();
  bool found = false;
  std::optional<Error> bad;
  const int rc = e->read([&](MDB_txn* txn) {
    MDB_val k = as_val(key), v;
    int r = mdb_get(txn, e->entries, &k, &v);
    if (r != MDB_SUCCESS)
      return r;
    // Used while the transaction pins the page.
    auto entry = view_entry(key, {static_cast<const char*>(v.mv_data), v.mv_size});
    if (entry) {
      fault::unguarded([&] { use(*entry); }); // the caller's code: its faults are its own
      found = true;
    } else {
      bad = entry.error();
    }
    return MDB_SUCCESS;
  });
  if (rc == MDB_NOTFOUND)
    return Visit::miss();
  if (rc != MDB_SUCCESS)
    return lmdb_error("read", rc, e->dir);
  if (bad) {
    if (!first_sight_of_damage(*e, key))
      return Visit::miss(); // reported (and counted) once already
    log::warn(bad->message + " (key " + key.hex() + "); treated as a miss and replaced");
    return Visit::damaged(bad->message);
  }
  if (found && hit && writes(*e)) {
    e->uses.record(key, AccessLog::now_us());
    if (e->uses.due()) // a process that only hits still tells eviction what it uses
      static_cast<void>(tell_through_log(*e, {}));
  }
  return found ? Visit::hit() : Visit::miss();
}

Expected<void> LmdbStore::put(const Digest& key, const Entry& entry) {
  return write_entry(key, entry, nullptr);
}

Expected<void> LmdbStore::put(const Digest& key, const Entry& entry, const Stats& counters) {
  return write_entry(key, entry, &counters);
}

Expected<void> LmdbStore::write_entry(const Digest& key, const Entry& entry,
                                      const Stats* counters) {
  auto e = env();
  if (!writes(*e))
    return read_only_error(e->dir);
  const std::string bytes = encode_entry(key, entry);
  const std::uint64_t size = footprint(*e, bytes.size());
  const auto limit = m_options.max_size;
  if (limit && size > *limit)
    return Error(ErrorCode::store_full, "an entry of " + format_size(bytes.size()) + " (" +
                                            format_size(size) +
                                            " in the data file) is larger than the user tier's "
                                            "size limit (" +
                                            format_size(*limit) + ")");
  Pruned pruned;
  const int rc = write_transaction(
      *e,
      [&](MDB_txn* txn) {
        pruned = {};
        MDB_val k = as_val(key), v{bytes.size(), const_cast<char*>(bytes.data())}, old;
        const std::uint64_t before = stored_total(*e, txn);
        const std::uint64_t replaced =
            mdb_get(txn, e->entries, &k, &old) == MDB_SUCCESS ? footprint(*e, old.mv_size) : 0;
        std::uint64_t total = before - std::min(before, replaced) + size;
        // Stored again (an import, a remote copy, two processes compiling it): its hits stay.
        const std::uint32_t hits = replaced ? stored_use(*e, txn, key).hits.value_or(0) : 0;
        int r = mdb_put(txn, e->entries, &k, &v, 0);
        if (r == MDB_SUCCESS)
          r = put_use(*e, txn, key, AccessLog::now_us(), hits);
        if (r == MDB_SUCCESS && counters)
          r = add_counters_in(*e, txn, *counters);
        if (r == MDB_SUCCESS)
          r = evict_over_limit(*e, txn, total, limit, key, pruned);
        return r == MDB_SUCCESS ? set_total(*e, txn, total) : r;
      },
      bytes.size());
  if (rc != MDB_SUCCESS)
    return lmdb_error("write", rc, e->dir);
  forget_damage(*e, key);
  if (pruned.entries)
    log::info("evicted " + std::to_string(pruned.entries) + " least recently used entries (" +
              format_size(pruned.bytes) + ") to stay under the user tier's size limit");
  return {};
}

Expected<bool> LmdbStore::remove(const Digest& key) {
  auto e = env();
  if (!writes(*e))
    return read_only_error(e->dir);
  const int rc = write_transaction(*e, [&](MDB_txn* txn) {
    MDB_val k = as_val(key), v;
    int r = mdb_get(txn, e->entries, &k, &v);
    if (r != MDB_SUCCESS)
      return r;
    const std::uint64_t before = stored_total(*e, txn);
    const std::uint64_t total = before - std::min(before, footprint(*e, v.mv_size));
    if ((r = mdb_del(txn, e->entries, &k, nullptr)) != MDB_SUCCESS)
      return r;
    mdb_del(txn, e->access, &k, nullptr);
    return set_total(*e, txn, total);
  });
  if (rc == MDB_NOTFOUND)
    return false;
  if (rc != MDB_SUCCESS)
    return lmdb_error("delete", rc, e->dir);
  forget_damage(*e, key);
  return true;
}

Expected<void> LmdbStore::for_each(const std::function<void(const Item&)>& fn) {
  auto e = env();
  if (!e->has_dbs)
    return {};
  const int rc = e->read([&](MDB_txn* txn) {
    return scan(txn, e->entries, [&](const MDB_val& k, const MDB_val& v) {
      Item item;
      if (k.mv_size == item.key.bytes.size())
        std::memcpy(item.key.bytes.data(), k.mv_data, k.mv_size);
      item.bytes = v.mv_size;
      auto backend = verify_entry(item.key, {static_cast<const char*>(v.mv_data), v.mv_size});
      item.valid = backend.has_value() && k.mv_size == item.key.bytes.size();
      if (backend)
        item.backend = *backend;
      fault::unguarded([&] { fn(item); });
    });
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("scan", rc, e->dir);
  return {};
}

Expected<void> LmdbStore::clear() {
  auto e = env();
  if (!writes(*e))
    return read_only_error(e->dir);
  const AccessLog::Batch uses = e->uses.take(); // dropped with the rest, or kept on failure
  TakenUseLog log;                              // its counters and uses go too
  bool taken = false;
  const int rc = e->transact(true, [&](MDB_txn* txn) {
    if (!taken) // a body run again keeps it
      log = TakenUseLog::take(e->cache);
    taken = true;
    if (log.refused()) // its counters would come back at the next fold
      return k_use_log_held;
    for (MDB_dbi dbi : {e->entries, e->counters, e->access, e->meta, e->records, e->tuning})
      if (int r = mdb_drop(txn, dbi, 0); r != MDB_SUCCESS)
        return r;
    return MDB_SUCCESS;
  });
  if (rc != MDB_SUCCESS)
    e->uses.restore(uses);
  if (rc == k_use_log_held)
    return use_log_held_error(e->dir, "nothing was cleared");
  if (rc != MDB_SUCCESS)
    return lmdb_error("clear", rc, e->dir);
  log.remove();
  return {};
}

Expected<LmdbStore::Discarded> LmdbStore::discard(const fs::path& dir) {
  Discarded result;
  bool read_only = false;
  auto cache = prepare_dir(dir, read_only);
  if (!cache || read_only) {
    result.reason =
        cache ? "the user tier in " + dir.string() + " is read-only" : cache.error().message;
    return result;
  }
  auto gate = EnvGate::enter_alone(*cache);
  if (!gate) {
    result.reason = gate.error().message;
    return result;
  }
  // A link planted there is not jitcache's to remove, nor to read through.
  if (const std::string unsafe = unsafe_files(*cache); !unsafe.empty()) {
    result.reason = unsafe + "; not clearing it";
    return result;
  }
  // Counted without the lock file: the gate is held exclusively, nobody has the environment open.
  MDB_env* env = nullptr;
  int rc = create_env(&env, dir, MDB_NOTLS | MDB_RDONLY | MDB_NOLOCK, 0);
  if (rc == MDB_SUCCESS) {
    rc = fault::guarded([&] {
      MDB_txn* txn = nullptr;
      int r = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn);
      if (r != MDB_SUCCESS)
        return r;
      MDB_dbi entries = 0, meta = 0;
      MDB_stat st{};
      r = mdb_dbi_open(txn, "entries", 0, &entries);
      if (r == MDB_SUCCESS)
        r = mdb_stat(txn, entries, &st);
      if (r == MDB_SUCCESS)
        r = mdb_dbi_open(txn, "meta", 0, &meta);
      if (r == MDB_SUCCESS) {
        result.entries = st.ms_entries;
        result.bytes = stored_total(txn, meta, entries);
      }
      mdb_txn_abort(txn);
      return r;
    });
    if (rc == fault::k_fault)
      forsake_env(dir);
    else
      mdb_env_close(env);
  }
  result.counted = rc == MDB_SUCCESS || rc == MDB_NOTFOUND;
  if (!result.counted)
    result.entries = result.bytes = 0;
  if (auto removed = remove_data_files(*cache); !removed)
    return std::move(removed).error();
  cache->remove(k_use_log_name); // its counters were the removed file's (nobody appends now)
  result.done = true;
  return result;
}

Expected<LmdbStore::Usage> LmdbStore::usage() {
  auto e = env();
  Usage usage;
  std::error_code ec;
  usage.file_bytes = fs::file_size(e->dir / "data.mdb", ec);
  if (ec)
    usage.file_bytes = 0;
  if (!e->has_dbs)
    return usage;
  // Sizes only: no entry is read, let alone verified.
  const int rc = e->read([&](MDB_txn* txn) {
    usage = Usage{0, 0, usage.file_bytes};
    return scan(txn, e->entries, [&](const MDB_val&, const MDB_val& v) {
      ++usage.entries;
      usage.value_bytes += v.mv_size;
    });
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("scan", rc, e->dir);
  return usage;
}

} // namespace jitcache::detail
