#include "core/lmdb_store.hpp"

#include "core/entry_codec.hpp"
#include "core/eviction.hpp"
#include "core/fork_guard.hpp"
#include "core/lmdb_env.hpp"
#include "core/log.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

namespace jitcache {

namespace fs = std::filesystem;

namespace {

constexpr char k_total_key[] = "bytes";

std::string counter_key(const std::string& backend, const std::string& name) {
  return backend + '\x1f' + name;
}

MDB_val as_val(const Digest& d) {
  return MDB_val{d.bytes.size(), const_cast<std::uint8_t*>(d.bytes.data())};
}

MDB_val as_val(std::uint64_t& v) {
  return MDB_val{sizeof v, &v};
}

std::uint64_t as_u64(const MDB_val& v) {
  std::uint64_t value = 0;
  if (v.mv_size == sizeof value)
    std::memcpy(&value, v.mv_data, sizeof value);
  return value;
}

Error read_only_error(const fs::path& dir) {
  return Error(ErrorCode::read_only, "user tier " + dir.string() + " is read-only");
}

// One environment per directory per process (LMDB's rule), found by device and inode.
std::mutex g_registry_mutex;
std::map<std::pair<dev_t, ino_t>, std::weak_ptr<LmdbStore::Env>> g_registry;

int add_counters_in(LmdbStore::Env& e, MDB_txn* txn, const Stats& delta) {
  for (const auto& [backend, counters] : delta.by_backend) {
    for (const auto& [name, amount] : counters) {
      std::string k = counter_key(backend, name);
      MDB_val kv{k.size(), k.data()}, v;
      std::uint64_t value = mdb_get(txn, e.counters, &kv, &v) == MDB_SUCCESS ? as_u64(v) : 0;
      value += amount;
      MDB_val nv = as_val(value);
      if (int r = mdb_put(txn, e.counters, &kv, &nv, 0); r != MDB_SUCCESS)
        return r;
    }
  }
  return MDB_SUCCESS;
}

// Calls `fn(key, value)` for every record of `dbi`, in key order. Returns an LMDB status.
template <typename Fn> int scan(MDB_txn* txn, MDB_dbi dbi, Fn&& fn) {
  MDB_cursor* cursor = nullptr;
  int r = mdb_cursor_open(txn, dbi, &cursor);
  if (r != MDB_SUCCESS)
    return r;
  MDB_val k, v;
  for (r = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); r == MDB_SUCCESS;
       r = mdb_cursor_get(cursor, &k, &v, MDB_NEXT))
    fn(k, v);
  mdb_cursor_close(cursor);
  return r == MDB_NOTFOUND ? MDB_SUCCESS : r;
}

// Writes the recorded uses of entries that still exist.
int apply_uses(LmdbStore::Env& e, MDB_txn* txn, const AccessLog::Batch& batch) {
  for (auto [key, when] : batch) {
    MDB_val k = as_val(key), v;
    if (mdb_get(txn, e.entries, &k, &v) != MDB_SUCCESS)
      continue;
    MDB_val t = as_val(when);
    if (int r = mdb_put(txn, e.access, &k, &t, 0); r != MDB_SUCCESS)
      return r;
  }
  return MDB_SUCCESS;
}

// The stored size of all entries, kept in "meta" by every write; counted once for a tier
// written before it was kept.
std::uint64_t stored_total(LmdbStore::Env& e, MDB_txn* txn) {
  MDB_val k{sizeof k_total_key - 1, const_cast<char*>(k_total_key)}, v;
  if (mdb_get(txn, e.meta, &k, &v) == MDB_SUCCESS)
    return as_u64(v);
  std::uint64_t total = 0;
  scan(txn, e.entries, [&](const MDB_val&, const MDB_val& value) { total += value.mv_size; });
  return total;
}

int set_total(LmdbStore::Env& e, MDB_txn* txn, std::uint64_t total) {
  MDB_val k{sizeof k_total_key - 1, const_cast<char*>(k_total_key)}, v = as_val(total);
  return mdb_put(txn, e.meta, &k, &v, 0);
}

// Removes least recently used entries (never `keep`) until `total` is at most `target`.
int evict(LmdbStore::Env& e, MDB_txn* txn, std::uint64_t& total, std::uint64_t target,
          const std::optional<Digest>& keep, LmdbStore::Pruned& pruned) {
  if (total <= target)
    return MDB_SUCCESS;
  std::vector<EvictionCandidate> candidates;
  int r = scan(txn, e.entries, [&](const MDB_val& k, const MDB_val& v) {
    EvictionCandidate c;
    if (k.mv_size != c.key.bytes.size())
      return;
    std::memcpy(c.key.bytes.data(), k.mv_data, k.mv_size);
    c.bytes = v.mv_size;
    MDB_val key = k, when;
    if (mdb_get(txn, e.access, &key, &when) == MDB_SUCCESS)
      c.last_use = as_u64(when);
    candidates.push_back(c);
  });
  if (r != MDB_SUCCESS)
    return r;
  for (const EvictionCandidate& victim :
       choose_victims(std::move(candidates), total, target, keep)) {
    MDB_val vk = as_val(victim.key);
    if ((r = mdb_del(txn, e.entries, &vk, nullptr)) != MDB_SUCCESS)
      return r;
    mdb_del(txn, e.access, &vk, nullptr);
    total -= std::min(total, victim.bytes);
    ++pruned.entries;
    pruned.bytes += victim.bytes;
  }
  if (pruned.entries == 0)
    return MDB_SUCCESS;
  Stats evicted;
  evicted.add("all", Counter::evicted, pruned.entries);
  evicted.add("all", Counter::evicted_bytes, pruned.bytes);
  return add_counters_in(e, txn, evicted);
}

// A write transaction (of about `bytes`) that also writes the uses recorded since the last one;
// they are kept for the next write when this one fails.
template <typename Body> int write(LmdbStore::Env& e, Body&& body, std::uint64_t bytes = 0) {
  const AccessLog::Batch uses = e.uses.take();
  const int rc = e.transact(true, [&](MDB_txn* txn) {
    int r = apply_uses(e, txn, uses);
    return r == MDB_SUCCESS ? body(txn) : r;
  });
  if (rc != MDB_SUCCESS)
    e.uses.restore(uses);
  return full_disk_or(rc, e.dir, bytes);
}

} // namespace

Expected<std::shared_ptr<LmdbStore>> LmdbStore::open(const fs::path& dir, bool read_only,
                                                     const Options& options) {
  // Before anything is created there: LMDB's locks and shared map do not work across the
  // clients of a network filesystem.
  if (const Filesystem where = options.probe(dir); where.network)
    return Error(ErrorCode::unsupported, "cache directory " + dir.string() +
                                             " is on a network filesystem (" + where.name +
                                             "), where LMDB's locking is unsafe");
  if (auto ok = prepare_dir(dir, read_only); !ok)
    return std::move(ok).error();
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return Error(ErrorCode::io_error, "cannot stat " + dir.string() + ": " + std::strerror(errno));
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  auto& slot = g_registry[{st.st_dev, st.st_ino}];
  if (auto env = slot.lock(); env && env->generation == fork_generation()) {
    if (env->read_only && !read_only)
      log::write_once(LogLevel::warn, "ro-shared:" + dir.string(),
                      "user tier " + dir.string() +
                          " is already open read-only in this process; using it read-only");
    return std::shared_ptr<LmdbStore>(new LmdbStore(env, read_only || env->read_only, options));
  }
  auto env = open_env(dir, read_only, options);
  if (!env)
    return std::move(env).error();
  slot = *env;
  return std::shared_ptr<LmdbStore>(new LmdbStore(*env, read_only, options));
}

LmdbStore::LmdbStore(std::shared_ptr<Env> env, bool read_only, Options options)
    : m_env(std::move(env)), m_read_only(read_only), m_options(std::move(options)) {}
LmdbStore::~LmdbStore() {
  // The last handle writes the uses recorded since the last write (best effort: they only
  // order eviction).
  if (m_env.use_count() == 1 && m_env->generation == fork_generation() && writes(*m_env) &&
      !m_env->uses.empty())
    write(*m_env, [](MDB_txn*) { return MDB_SUCCESS; });
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
fs::path LmdbStore::lease_dir() const {
  return dir() / "leases";
}
std::optional<std::uint64_t> LmdbStore::max_size() const {
  return m_options.max_size;
}
std::uint64_t LmdbStore::corrupt_seen() const {
  return std::atomic_load(&m_env)->corrupt.load();
}

Expected<std::optional<Entry>> LmdbStore::get(const Digest& key) {
  std::optional<Entry> found;
  auto seen = visit(key, [&](const EntryView& entry) { found = to_entry(entry); });
  if (!seen)
    return std::move(seen).error();
  return found;
}

Expected<bool> LmdbStore::visit(const Digest& key,
                                const std::function<void(const EntryView&)>& use) {
  auto e = env();
  if (!e->has_dbs)
    return false;
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
      use(*entry);
      found = true;
    } else {
      bad = entry.error();
    }
    return MDB_SUCCESS;
  });
  if (rc == MDB_NOTFOUND)
    return false;
  if (rc != MDB_SUCCESS)
    return lmdb_error("read", rc, e->dir);
  if (bad) {
    e->corrupt.fetch_add(1);
    log::warn(bad->message + " (key " + key.hex() + "); treated as a miss and replaced");
  }
  if (found && writes(*e)) {
    e->uses.record(key, AccessLog::now_us());
    if (e->uses.due()) // a process that only hits still tells eviction what it uses
      write(*e, [](MDB_txn*) { return MDB_SUCCESS; });
  }
  return found;
}

Expected<std::optional<std::string>> LmdbStore::get_record(const Digest& name) {
  std::optional<std::string> found;
  auto seen = visit_record(name, [&](std::string_view bytes) { found.emplace(bytes); });
  if (!seen)
    return std::move(seen).error();
  return found;
}

Expected<bool> LmdbStore::visit_record(const Digest& name,
                                       const std::function<void(std::string_view)>& use) {
  auto e = env();
  if (!e->has_records)
    return false;
  bool found = false;
  const int rc = e->read([&](MDB_txn* txn) {
    MDB_val k = as_val(name), v;
    const int r = mdb_get(txn, e->records, &k, &v);
    if (r == MDB_SUCCESS) {
      use({static_cast<const char*>(v.mv_data), v.mv_size});
      found = true;
    }
    return r;
  });
  if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
    return lmdb_error("read", rc, e->dir);
  return found;
}

Expected<void> LmdbStore::put_record(const Digest& name, std::string_view bytes) {
  auto e = env();
  if (!writes(*e) || !e->has_records)
    return read_only_error(e->dir);
  const int rc = write(
      *e,
      [&](MDB_txn* txn) {
        MDB_stat st{};
        int r = mdb_stat(txn, e->records, &st);
        if (r == MDB_SUCCESS && st.ms_entries >= k_max_records)
          r = mdb_drop(txn, e->records, 0);
        MDB_val k = as_val(name), v{bytes.size(), const_cast<char*>(bytes.data())};
        return r == MDB_SUCCESS ? mdb_put(txn, e->records, &k, &v, 0) : r;
      },
      bytes.size());
  if (rc != MDB_SUCCESS)
    return lmdb_error("write", rc, e->dir);
  return {};
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
  const auto limit = m_options.max_size;
  if (limit && bytes.size() > *limit)
    return Error(ErrorCode::store_full, "an entry of " + format_size(bytes.size()) +
                                            " is larger than the user tier's size limit (" +
                                            format_size(*limit) + ")");
  Pruned pruned;
  const int rc = write(
      *e,
      [&](MDB_txn* txn) {
        pruned = {};
        MDB_val k = as_val(key), v{bytes.size(), const_cast<char*>(bytes.data())}, old;
        const std::uint64_t before = stored_total(*e, txn);
        const std::uint64_t replaced =
            mdb_get(txn, e->entries, &k, &old) == MDB_SUCCESS ? old.mv_size : 0;
        std::uint64_t total = before - std::min(before, replaced) + bytes.size();
        int r = mdb_put(txn, e->entries, &k, &v, 0);
        std::uint64_t now = AccessLog::now_us();
        MDB_val t = as_val(now);
        if (r == MDB_SUCCESS)
          r = mdb_put(txn, e->access, &k, &t, 0);
        if (r == MDB_SUCCESS && counters)
          r = add_counters_in(*e, txn, *counters);
        if (r == MDB_SUCCESS && limit && total > *limit)
          r = evict(*e, txn, total, eviction_target(*limit), key, pruned);
        return r == MDB_SUCCESS ? set_total(*e, txn, total) : r;
      },
      bytes.size());
  if (rc != MDB_SUCCESS)
    return lmdb_error("write", rc, e->dir);
  if (pruned.entries)
    log::info("evicted " + std::to_string(pruned.entries) + " least recently used entries (" +
              format_size(pruned.bytes) + ") to stay under the user tier's size limit");
  return {};
}

Expected<bool> LmdbStore::remove(const Digest& key) {
  auto e = env();
  if (!writes(*e))
    return read_only_error(e->dir);
  const int rc = write(*e, [&](MDB_txn* txn) {
    MDB_val k = as_val(key), v;
    int r = mdb_get(txn, e->entries, &k, &v);
    if (r != MDB_SUCCESS)
      return r;
    const std::uint64_t before = stored_total(*e, txn);
    const std::uint64_t total = before - std::min<std::uint64_t>(before, v.mv_size);
    if ((r = mdb_del(txn, e->entries, &k, nullptr)) != MDB_SUCCESS)
      return r;
    mdb_del(txn, e->access, &k, nullptr);
    return set_total(*e, txn, total);
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
      fn(item);
    });
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("scan", rc, e->dir);
  return {};
}

Expected<void> LmdbStore::add_counters(const Stats& delta) {
  auto e = env();
  if (!writes(*e) || (delta.by_backend.empty() && e->uses.empty()))
    return {};
  const int rc = write(*e, [&](MDB_txn* txn) { return add_counters_in(*e, txn, delta); });
  if (rc != MDB_SUCCESS)
    return lmdb_error("counter update", rc, e->dir);
  return {};
}

Expected<Stats> LmdbStore::counters() {
  auto e = env();
  Stats stats;
  if (!e->has_dbs)
    return stats;
  const int rc = e->read([&](MDB_txn* txn) {
    return scan(txn, e->counters, [&](const MDB_val& k, const MDB_val& v) {
      const std::string name(static_cast<const char*>(k.mv_data), k.mv_size);
      const auto sep = name.find('\x1f');
      if (sep != std::string::npos && v.mv_size == sizeof(std::uint64_t))
        stats.by_backend[name.substr(0, sep)][name.substr(sep + 1)] += as_u64(v);
    });
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("counter read", rc, e->dir);
  return stats;
}

Expected<void> LmdbStore::clear() {
  auto e = env();
  if (!writes(*e))
    return read_only_error(e->dir);
  e->uses.take();
  const int rc = e->transact(true, [&](MDB_txn* txn) {
    for (MDB_dbi dbi : {e->entries, e->counters, e->access, e->meta, e->records})
      if (int r = mdb_drop(txn, dbi, 0); r != MDB_SUCCESS)
        return r;
    return MDB_SUCCESS;
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("clear", rc, e->dir);
  return {};
}

Expected<LmdbStore::Pruned> LmdbStore::prune(std::uint64_t max_size) {
  auto e = env();
  if (!writes(*e))
    return read_only_error(e->dir);
  Pruned pruned;
  const int rc = write(*e, [&](MDB_txn* txn) {
    pruned = {};
    std::uint64_t total = stored_total(*e, txn);
    const int r = evict(*e, txn, total, max_size, std::nullopt, pruned);
    return r == MDB_SUCCESS ? set_total(*e, txn, total) : r;
  });
  if (rc != MDB_SUCCESS)
    return lmdb_error("prune", rc, e->dir);
  return pruned;
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

} // namespace jitcache
