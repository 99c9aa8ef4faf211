#include "core/lmdb_store.hpp"

#include "core/entry_codec.hpp"
#include "core/log.hpp"

#include <lmdb.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace jitcache {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t k_initial_map_size = std::size_t(1) << 30;
constexpr int k_max_grow_attempts = 16;

// Bumped in every child after fork(): an environment opened under an older generation belongs to
// an ancestor and must never be used (LMDB forbids it), nor closed (that would release the
// parent's locks).
std::atomic<unsigned> g_fork_generation{0};
void on_fork_child() { g_fork_generation.fetch_add(1); }
const bool g_atfork_registered = [] {
  pthread_atfork(nullptr, nullptr, on_fork_child);
  return true;
}();

Error lmdb_error(const std::string& what, int rc, const fs::path& dir) {
  ErrorCode code = ErrorCode::io_error;
  if (rc == MDB_MAP_FULL || rc == ENOSPC)
    code = ErrorCode::store_full;
  else if (rc == EACCES || rc == EROFS || rc == EPERM)
    code = ErrorCode::read_only;
  else if (rc == MDB_CORRUPTED || rc == MDB_INVALID || rc == MDB_PAGE_NOTFOUND)
    code = ErrorCode::corrupt;
  return Error(code, what + " failed in " + dir.string() + ": " + mdb_strerror(rc));
}

std::string counter_key(const std::string& backend, const std::string& name) {
  return backend + '\x1f' + name;
}

MDB_val as_val(const Digest& d) {
  return MDB_val{d.bytes.size(), const_cast<std::uint8_t*>(d.bytes.data())};
}

} // namespace

struct LmdbStore::Env {
  MDB_env* env = nullptr;
  MDB_dbi entries = 0;
  MDB_dbi counters = 0;
  bool has_dbs = false; // false: a read-only environment nobody has written yet
  fs::path dir;
  bool read_only = false;
  unsigned generation = g_fork_generation.load();
  std::shared_mutex resize_mutex; // transactions shared; map resizing exclusive
  std::atomic<std::uint64_t> corrupt{0};

  ~Env() {
    if (env && generation == g_fork_generation.load())
      mdb_env_close(env);
  }

  // Runs `body(txn)` in a transaction, adopting a map grown by another process and growing the
  // map when full. `body` returns an LMDB status; MDB_SUCCESS commits (write) or ends (read).
  template <typename Body> int transact(bool write, Body&& body) {
    for (int attempt = 0; attempt < k_max_grow_attempts; ++attempt) {
      int rc;
      {
        std::shared_lock<std::shared_mutex> lock(resize_mutex);
        MDB_txn* txn = nullptr;
        rc = mdb_txn_begin(env, nullptr, write ? 0 : MDB_RDONLY, &txn);
        if (rc == MDB_SUCCESS) {
          rc = body(txn);
          // Read transactions are committed too: that is what keeps database handles opened
          // in them (an abort would close them).
          if (rc == MDB_SUCCESS)
            rc = mdb_txn_commit(txn);
          else
            mdb_txn_abort(txn);
        }
      }
      if (rc == MDB_MAP_RESIZED) {
        std::unique_lock<std::shared_mutex> lock(resize_mutex);
        mdb_env_set_mapsize(env, 0);
        continue;
      }
      if (rc == MDB_MAP_FULL) {
        std::unique_lock<std::shared_mutex> lock(resize_mutex);
        MDB_envinfo info;
        mdb_env_info(env, &info);
        const std::size_t grown = info.me_mapsize * 2;
        log::info("user tier map full; growing it to " + format_size(grown));
        if (mdb_env_set_mapsize(env, grown) != MDB_SUCCESS)
          return MDB_MAP_FULL;
        continue;
      }
      return rc;
    }
    return MDB_MAP_FULL;
  }
};

namespace {

// One environment per directory per process (LMDB's rule), found by device and inode.
std::mutex g_registry_mutex;
std::map<std::pair<dev_t, ino_t>, std::weak_ptr<LmdbStore::Env>> g_registry;

Expected<void> prepare_dir(const fs::path& dir, bool& read_only) {
  std::error_code ec;
  // The nearest existing ancestor (or the directory itself) must be a directory.
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    if (fs::exists(p, ec)) {
      if (!fs::is_directory(p, ec))
        return Error(ErrorCode::io_error, "cache directory " + dir.string() + ": " + p.string() +
                                              " is not a directory");
      break;
    }
    if (p == p.parent_path())
      break;
  }
  if (!fs::exists(dir, ec)) {
    if (read_only)
      return Error(ErrorCode::io_error, "cache directory " + dir.string() + " does not exist");
    // Private to the user: every directory created here is 0700.
    const mode_t old_mask = ::umask(077);
    fs::create_directories(dir, ec);
    ::umask(old_mask);
    if (ec)
      return Error(ErrorCode::io_error,
                   "cannot create cache directory " + dir.string() + ": " + ec.message());
  }
  if (!read_only && ::access(dir.c_str(), W_OK) != 0) {
    log::write_once(LogLevel::warn, "ro:" + dir.string(),
                    "cache directory " + dir.string() + " is not writable (" +
                        std::strerror(errno) + "); using it read-only");
    read_only = true;
  }
  return {};
}

// Moves an unreadable data file aside so that a fresh environment can be created.
void quarantine(const fs::path& dir, int rc) {
  const fs::path data = dir / "data.mdb";
  const fs::path aside = dir / ("data.mdb.corrupt-" + std::to_string(std::time(nullptr)));
  std::error_code ec;
  fs::rename(data, aside, ec);
  fs::remove(dir / "lock.mdb", ec);
  log::warn("user tier " + data.string() + " is unreadable (" + mdb_strerror(rc) +
            "); moved it to " + aside.string() + " and started a fresh one");
}

Expected<std::shared_ptr<LmdbStore::Env>> open_env(const fs::path& dir, bool read_only) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto env = std::make_shared<LmdbStore::Env>();
    env->dir = dir;
    env->read_only = read_only;
    mdb_env_create(&env->env);
    mdb_env_set_maxdbs(env->env, 4);
    mdb_env_set_maxreaders(env->env, 1022);
    mdb_env_set_mapsize(env->env, k_initial_map_size);
    unsigned flags = MDB_NOTLS | (read_only ? MDB_RDONLY : 0u);
    int rc = mdb_env_open(env->env, dir.c_str(), flags, 0600);
    if (rc != MDB_SUCCESS && read_only && (rc == EACCES || rc == EROFS)) {
      // A read-only filesystem cannot hold the lock file; nobody can write there either.
      mdb_env_close(env->env);
      mdb_env_create(&env->env);
      mdb_env_set_maxdbs(env->env, 4);
      rc = mdb_env_open(env->env, dir.c_str(), flags | MDB_NOLOCK, 0600);
    }
    if (rc != MDB_SUCCESS) {
      mdb_env_close(env->env);
      env->env = nullptr;
      const bool corrupt = rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH || rc == MDB_CORRUPTED;
      if (corrupt && !read_only && attempt == 0) {
        quarantine(dir, rc);
        continue;
      }
      if (read_only && rc == ENOENT)
        return Error(ErrorCode::io_error, "no user tier in " + dir.string() + " yet");
      return lmdb_error("mdb_env_open", rc, dir);
    }
    int stale = 0;
    mdb_reader_check(env->env, &stale); // clear reader slots of dead processes
    rc = env->transact(!read_only, [&](MDB_txn* txn) {
      const unsigned create = read_only ? 0 : MDB_CREATE;
      int r = mdb_dbi_open(txn, "entries", create, &env->entries);
      if (r == MDB_SUCCESS)
        r = mdb_dbi_open(txn, "counters", create, &env->counters);
      return r;
    });
    if (rc == MDB_SUCCESS)
      env->has_dbs = true;
    else if (!(read_only && rc == MDB_NOTFOUND))
      return lmdb_error("mdb_dbi_open", rc, dir);
    return env;
  }
  return Error(ErrorCode::corrupt, "cannot open the user tier in " + dir.string());
}

} // namespace

Expected<std::shared_ptr<LmdbStore>> LmdbStore::open(const fs::path& dir, bool read_only) {
  (void)g_atfork_registered;
  if (auto ok = prepare_dir(dir, read_only); !ok)
    return std::move(ok).error();
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return Error(ErrorCode::io_error, "cannot stat " + dir.string() + ": " + std::strerror(errno));
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  auto& slot = g_registry[{st.st_dev, st.st_ino}];
  if (auto env = slot.lock(); env && env->generation == g_fork_generation.load() &&
                             (env->read_only || !read_only))
    return std::shared_ptr<LmdbStore>(new LmdbStore(env));
  auto env = open_env(dir, read_only);
  if (!env)
    return std::move(env).error();
  slot = *env;
  return std::shared_ptr<LmdbStore>(new LmdbStore(*env));
}

LmdbStore::LmdbStore(std::shared_ptr<Env> env) : m_env(std::move(env)) {}
LmdbStore::~LmdbStore() = default;

std::shared_ptr<LmdbStore::Env> LmdbStore::env() {
  auto env = std::atomic_load(&m_env);
  if (env->generation == g_fork_generation.load())
    return env;
  // We are in a child of the process that opened it: open our own environment.
  auto reopened = open(env->dir, env->read_only);
  if (!reopened)
    return env; // operations will fail below with a clear error
  auto fresh = (*reopened)->m_env;
  std::atomic_store(&m_env, fresh);
  return fresh;
}

bool LmdbStore::writable() const { return !std::atomic_load(&m_env)->read_only; }
const fs::path& LmdbStore::dir() const { return m_env->dir; }
std::uint64_t LmdbStore::corrupt_seen() const { return m_env->corrupt.load(); }

Expected<std::optional<Entry>> LmdbStore::get(const Digest& key) {
  auto e = env();
  if (!e->has_dbs)
    return std::optional<Entry>();
  std::optional<Entry> found;
  std::optional<Error> bad;
  const int rc = e->transact(false, [&](MDB_txn* txn) {
    MDB_val k = as_val(key), v;
    int r = mdb_get(txn, e->entries, &k, &v);
    if (r != MDB_SUCCESS)
      return r;
    // Copy out while the transaction pins the page.
    auto entry = decode_entry(key, {static_cast<const char*>(v.mv_data), v.mv_size});
    if (entry)
      found = std::move(*entry);
    else
      bad = entry.error();
    return MDB_SUCCESS;
  });
  if (rc == MDB_NOTFOUND)
    return std::optional<Entry>();
  if (rc != MDB_SUCCESS)
    return lmdb_error("read", rc, e->dir);
  if (bad) {
    e->corrupt.fetch_add(1);
    log::warn(bad->message + " (key " + key.hex() + "); treated as a miss and replaced");
  }
  return found;
}

Expected<void> LmdbStore::put(const Digest& key, const Entry& entry) {
  auto e = env();
  if (e->read_only)
    return Error(ErrorCode::read_only, "user tier " + e->dir.string() + " is read-only");
  const std::string bytes = encode_entry(key, entry);
  const int rc = e->transact(true, [&](MDB_txn* txn) {
    MDB_val k = as_val(key), v{bytes.size(), const_cast<char*>(bytes.data())};
    return mdb_put(txn, e->entries, &k, &v, 0);
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("write", rc, e->dir);
  return {};
}

Expected<bool> LmdbStore::remove(const Digest& key) {
  auto e = env();
  if (e->read_only)
    return Error(ErrorCode::read_only, "user tier " + e->dir.string() + " is read-only");
  const int rc = e->transact(true, [&](MDB_txn* txn) {
    MDB_val k = as_val(key);
    return mdb_del(txn, e->entries, &k, nullptr);
  });
  if (rc == MDB_NOTFOUND)
    return false;
  if (rc != MDB_SUCCESS)
    return lmdb_error("delete", rc, e->dir);
  return true;
}

Expected<void> LmdbStore::for_each(const std::function<void(const Item&)>& fn) {
  auto e = env();
  if (!e->has_dbs)
    return {};
  const int rc = e->transact(false, [&](MDB_txn* txn) {
    MDB_cursor* cursor = nullptr;
    int r = mdb_cursor_open(txn, e->entries, &cursor);
    if (r != MDB_SUCCESS)
      return r;
    MDB_val k, v;
    for (r = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); r == MDB_SUCCESS;
         r = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
      Item item;
      if (k.mv_size == item.key.bytes.size())
        std::memcpy(item.key.bytes.data(), k.mv_data, k.mv_size);
      item.bytes = v.mv_size;
      auto backend = verify_entry(item.key, {static_cast<const char*>(v.mv_data), v.mv_size});
      item.valid = backend.has_value() && k.mv_size == item.key.bytes.size();
      if (backend)
        item.backend = *backend;
      fn(item);
    }
    mdb_cursor_close(cursor);
    return r == MDB_NOTFOUND ? MDB_SUCCESS : r;
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("scan", rc, e->dir);
  return {};
}

Expected<void> LmdbStore::add_counters(const Stats& delta) {
  auto e = env();
  if (e->read_only || delta.by_backend.empty())
    return {};
  const int rc = e->transact(true, [&](MDB_txn* txn) {
    for (const auto& [backend, counters] : delta.by_backend) {
      for (const auto& [name, amount] : counters) {
        std::string k = counter_key(backend, name);
        MDB_val kv{k.size(), k.data()}, v;
        std::uint64_t value = 0;
        if (mdb_get(txn, e->counters, &kv, &v) == MDB_SUCCESS && v.mv_size == sizeof value)
          std::memcpy(&value, v.mv_data, sizeof value);
        value += amount;
        MDB_val nv{sizeof value, &value};
        if (int r = mdb_put(txn, e->counters, &kv, &nv, 0); r != MDB_SUCCESS)
          return r;
      }
    }
    return MDB_SUCCESS;
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("counter update", rc, e->dir);
  return {};
}

Expected<Stats> LmdbStore::counters() {
  auto e = env();
  Stats stats;
  if (!e->has_dbs)
    return stats;
  const int rc = e->transact(false, [&](MDB_txn* txn) {
    MDB_cursor* cursor = nullptr;
    int r = mdb_cursor_open(txn, e->counters, &cursor);
    if (r != MDB_SUCCESS)
      return r;
    MDB_val k, v;
    for (r = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); r == MDB_SUCCESS;
         r = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
      const std::string name(static_cast<const char*>(k.mv_data), k.mv_size);
      const auto sep = name.find('\x1f');
      std::uint64_t value = 0;
      if (sep == std::string::npos || v.mv_size != sizeof value)
        continue;
      std::memcpy(&value, v.mv_data, sizeof value);
      stats.add(name.substr(0, sep), name.substr(sep + 1), value);
    }
    mdb_cursor_close(cursor);
    return r == MDB_NOTFOUND ? MDB_SUCCESS : r;
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("counter read", rc, e->dir);
  return stats;
}

Expected<void> LmdbStore::clear() {
  auto e = env();
  if (e->read_only)
    return Error(ErrorCode::read_only, "user tier " + e->dir.string() + " is read-only");
  const int rc = e->transact(true, [&](MDB_txn* txn) {
    int r = mdb_drop(txn, e->entries, 0);
    return r == MDB_SUCCESS ? mdb_drop(txn, e->counters, 0) : r;
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("clear", rc, e->dir);
  return {};
}

Expected<LmdbStore::Usage> LmdbStore::usage() {
  auto e = env();
  Usage usage;
  std::error_code ec;
  usage.file_bytes = fs::file_size(e->dir / "data.mdb", ec);
  if (ec)
    usage.file_bytes = 0;
  auto scanned = for_each([&](const Item& item) {
    ++usage.entries;
    usage.value_bytes += item.bytes;
  });
  if (!scanned)
    return std::move(scanned).error();
  return usage;
}

} // namespace jitcache
