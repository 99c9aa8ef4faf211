#include "core/tiers/user/lmdb_env.hpp"

#include "core/support/clock.hpp"
#include "core/support/fork_guard.hpp"
#include "core/support/log.hpp"
#include "core/tiers/user/eviction.hpp"
#include "core/tiers/user/lmdb_health.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace jitcache::detail {

namespace fs = std::filesystem;

namespace {

// How long an open waits for another process's compaction to finish.
constexpr std::chrono::seconds k_gate_wait{30};
// Reader slots: every thread of every process with a read transaction open takes one.
constexpr unsigned k_max_readers = 1022;
// LMDB's lock file for k_max_readers on 64-bit Linux: a 192-byte header and 64 bytes a slot.
constexpr off_t k_lock_file_bytes = 192 + (k_max_readers - 1) * 64;

// Whether every byte of the file has a disk block (sparse pages of a shared map are SIGBUS on a
// full disk).
bool fully_backed(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && st.st_size > 0 && st.st_blocks * 512 >= st.st_size;
}

// What is wrong with a data file LMDB opened: shorter than its metadata says (reading past the
// end of a memory map is SIGBUS, so this is checked before any read), or marked damaged by an
// earlier transaction. Empty when nothing is.
std::string integrity_problem(MDB_env* env, const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / k_damage_marker, ec))
    return "an earlier transaction found it damaged";
  // Metadata first, then the size: a writer extends the file before committing a meta page
  // that refers to the new end.
  MDB_envinfo info{};
  MDB_stat st{};
  if (mdb_env_info(env, &info) != MDB_SUCCESS || mdb_env_stat(env, &st) != MDB_SUCCESS)
    return {};
  const std::uint64_t needed = (std::uint64_t(info.me_last_pgno) + 1) * st.ms_psize;
  const std::uint64_t size = fs::file_size(dir / "data.mdb", ec);
  if (!ec && size < needed)
    return "truncated: " + std::to_string(size) + " bytes, its metadata needs " +
           std::to_string(needed);
  return {};
}

// The marker that tells the next open to move the data file aside.
void mark_damaged(const CacheDir& cache) {
  if (auto fd = cache.open_file(k_damage_marker, O_WRONLY | O_CREAT))
    ::close(*fd);
}

// LMDB's assertions abort the process; inside a guarded region they end the region instead.
void on_lmdb_assert(MDB_env*, const char* message) {
  fault::escape(message);
}

// What LMDB 0.9 keeps at the start of its lock file (MDB_txninfo in mdb.c, Linux: POSIX
// robust mutexes, reader pid locks): a magic number, the lock format, the reader-table mutex
// at byte 8, and the writer mutex in the next 64-byte cache line. Checked before use: a
// different LMDB build lays it out differently, and then nothing is touched.
constexpr std::uint32_t k_lock_magic = 0xBEEFC0DE;
constexpr std::uint32_t k_lock_format = 1 + (1u << 16); // MDB_LOCK_VERSION, MDB_PIDLOCK
constexpr std::size_t k_reader_mutex_at = 8;
constexpr std::size_t k_writer_mutex_at = 64;

// A thread that faulted inside a transaction may hold LMDB's writer mutex (a write) or its
// reader-table mutex, which live in the lock file that every process maps: left held, every
// other process's next write would wait forever (the mutexes are robust, but only a thread that
// exits releases them). Unlocks whichever of the two this thread holds, found through this
// process's mapping of the lock file (LMDB keeps its address to itself). Never throws.
void release_lock_file_mutexes(const fs::path& dir, int lock_fd) {
#ifdef __GLIBC__
  struct stat st {};
  if ((lock_fd >= 0 ? ::fstat(lock_fd, &st) : ::stat((dir / "lock.mdb").c_str(), &st)) != 0)
    return;
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (!maps)
    return;
  char line[1024];
  const pid_t self = static_cast<pid_t>(::syscall(SYS_gettid));
  while (std::fgets(line, sizeof line, maps)) {
    unsigned long from = 0, to = 0, offset = 0, inode = 0;
    unsigned major_id = 0, minor_id = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &from, &to, perms, &offset, &major_id,
                    &minor_id, &inode) != 7 ||
        offset != 0 || inode != st.st_ino || major_id != major(st.st_dev) ||
        minor_id != minor(st.st_dev) || perms[1] != 'w' || to - from < k_writer_mutex_at + 64)
      continue;
    auto* base = reinterpret_cast<unsigned char*>(from);
    std::uint32_t head[2];
    std::memcpy(head, base, sizeof head);
    if (head[0] != k_lock_magic || head[1] != k_lock_format)
      continue;
    for (std::size_t at : {k_reader_mutex_at, k_writer_mutex_at}) {
      auto* mutex = reinterpret_cast<pthread_mutex_t*>(base + at);
      if (mutex->__data.__owner == self) {
        ::pthread_mutex_unlock(mutex);
        log::info("released LMDB's " + std::string(at == k_writer_mutex_at ? "writer" : "reader") +
                  " mutex held by a transaction that faulted in " + dir.string());
      }
    }
  }
  std::fclose(maps);
#else
  (void)dir;
  (void)lock_fd;
#endif
}

// LMDB writes its lock file through a shared memory map: on a full disk, touching a page that
// has no block yet is SIGBUS, not an error. Give every page a block first. A new lock file is
// made at the size LMDB would give it (before LMDB opens it: nothing to disturb); an existing
// one keeps its size (other processes derived their reader count from it). Returns the
// descriptor, which the Env keeps open until after mdb_env_close: closing any descriptor of the
// lock file drops this process's POSIX locks on it, LMDB's included. -1, with `error` set, when
// it cannot be opened for writing or backed (ENOSPC: the disk is full); the file is never
// deleted then (another process may have it open).
int back_lock_file(const CacheDir& cache, int& error) {
  error = 0;
  auto fd = cache.open_file("lock.mdb", O_RDWR | O_CREAT);
  if (!fd) {
    error = errno;
    return -1;
  }
  if (!fully_backed(*fd)) {
    struct stat st {};
    ::fstat(*fd, &st);
    error = ::posix_fallocate(*fd, 0, st.st_size > 0 ? st.st_size : k_lock_file_bytes);
    if (error) {
      ::close(*fd);
      return -1;
    }
  }
  return *fd;
}

// A reader uses the lock file only as it is: present and fully backed (nothing to allocate).
// Returns its descriptor (kept as back_lock_file's is), or -1: LMDB is then opened without one.
int usable_lock_file(const CacheDir& cache) {
  if (!cache.stat("lock.mdb"))
    return -1;
  auto fd = cache.open_file("lock.mdb", O_RDONLY);
  if (!fd)
    return -1;
  if (fully_backed(*fd))
    return *fd;
  ::close(*fd);
  return -1;
}

// A writer makes data.mdb and lock.mdb itself (O_EXCL: never through a link) before LMDB opens
// them by path, and backs the lock file. Returns the lock file's descriptor; an error says why
// this process can only read (a full disk, files it may not write).
Expected<int> make_files(const CacheDir& cache) {
  auto data = cache.open_file("data.mdb", O_RDWR | O_CREAT);
  if (!data)
    return std::move(data).error();
  ::close(*data); // LMDB holds no lock on the data file: closing this descriptor drops none
  int error = 0;
  const int fd = back_lock_file(cache, error);
  if (fd >= 0)
    return fd;
  if (error == ENOSPC)
    return Error(ErrorCode::store_full, "the disk holding " + cache.path().string() +
                                            " is full: LMDB's lock file cannot be given its "
                                            "disk blocks");
  return Error(ErrorCode::io_error, (cache.path() / "lock.mdb").string() +
                                        " cannot be opened for writing: " + std::strerror(error));
}

} // namespace

std::string unsafe_files(const CacheDir& cache) {
  for (const char* name : {"data.mdb", "lock.mdb"}) {
    const auto st = cache.stat(name);
    if (!st || (S_ISREG(st->st_mode) && st->st_nlink == 1))
      continue;
    return (cache.path() / name).string() + (S_ISLNK(st->st_mode)   ? " is a symbolic link"
                                             : S_ISREG(st->st_mode) ? " has more than one link"
                                                                    : " is not a regular file");
  }
  return {};
}

namespace {

bool same_file(int fd, const std::optional<struct stat>& there) {
  struct stat st {};
  return fd >= 0 && there && S_ISREG(there->st_mode) && ::fstat(fd, &st) == 0 &&
         st.st_dev == there->st_dev && st.st_ino == there->st_ino;
}

// Whether LMDB opened the files that were checked: data.mdb (and the lock file held in
// `lock_fd`, when one is used) are still those regular files, not links put there meanwhile.
bool opened_what_was_checked(MDB_env* env, const CacheDir& cache, int lock_fd) {
  int data_fd = -1;
  return mdb_env_get_fd(env, &data_fd) == MDB_SUCCESS &&
         same_file(data_fd, cache.stat("data.mdb")) &&
         (lock_fd < 0 || same_file(lock_fd, cache.stat("lock.mdb")));
}

} // namespace

LmdbStore::Env::~Env() {
  if (generation != fork_generation()) {
    // A child's copy of its parent's environment: LMDB forbids using or closing it, and its lock
    // file descriptor stays open too. It carries no POSIX lock in the child (they are not
    // inherited), but closing any descriptor of lock.mdb would drop every lock the child holds
    // there: those of the environment it opened of its own (LmdbStore::env).
    return;
  }
  if (poisoned) // see poison(): LMDB's handles leak; our descriptors are closed already
    return;
  const int rc = fault::guarded([&] {
    for (MDB_txn* txn : m_idle_readers)
      mdb_txn_abort(txn);
    if (env)
      mdb_env_close(env);
    for (MDB_env* other : {m_read_env, m_writable}) // see open_for_writing
      if (other)
        mdb_env_close(other);
    return MDB_SUCCESS;
  });
  if (rc == fault::k_fault)
    log::warn("user tier " + dir.string() + ": " + fault::last_fault() +
              " while closing it (contained; the environment was left open)");
  else if (env && !read_only)
    mark_clean_end(cache, gate);
  if (lock_fd >= 0)
    ::close(lock_fd);
}

MDB_txn* LmdbStore::Env::take_reader() {
  std::lock_guard<std::mutex> lock(m_reader_mutex);
  if (m_idle_readers.empty())
    return nullptr;
  MDB_txn* txn = m_idle_readers.back();
  m_idle_readers.pop_back();
  return txn;
}

void LmdbStore::Env::give_back_reader(MDB_txn* txn) {
  {
    std::lock_guard<std::mutex> lock(m_reader_mutex);
    if (m_idle_readers.size() < k_pooled_readers) {
      m_idle_readers.push_back(txn);
      return;
    }
  }
  mdb_txn_abort(txn);
}

void LmdbStore::Env::adopt(const Databases& opened) {
  for (auto [ours, theirs] : {std::pair{&entries, opened.entries},
                              {&counters, opened.counters},
                              {&access, opened.access},
                              {&meta, opened.meta},
                              {&records, opened.records},
                              {&tuning, opened.tuning}})
    if (*ours != theirs)
      *ours = theirs;
}

bool LmdbStore::Env::restore_locks() {
  if (lock_fd < 0)
    return false;
  struct flock shared {};
  shared.l_type = F_RDLCK;
  shared.l_whence = SEEK_SET;
  shared.l_start = 0;
  shared.l_len = 1;
  int rc;
  while ((rc = ::fcntl(lock_fd, F_SETLKW, &shared)) != 0 && errno == EINTR) {
  }
  struct flock live = shared;
  live.l_type = F_WRLCK;
  live.l_start = ::getpid();
  return rc == 0 && ::fcntl(lock_fd, F_SETLK, &live) == 0;
}

int LmdbStore::Env::open_for_writing() {
  std::unique_lock<std::shared_mutex> lock(resize_mutex); // no transaction of ours runs
  if (poisoned.load(std::memory_order_acquire))
    return k_poisoned; // its locks and its gate are given up: nothing may be opened again
  if (!reading_until_write.load(std::memory_order_relaxed))
    return MDB_SUCCESS;
  int rc = fault::guarded([&] {
    std::lock_guard<std::mutex> readers(m_reader_mutex);
    for (MDB_txn* txn : m_idle_readers) // the read-only environment's
      mdb_txn_abort(txn);
    m_idle_readers.clear();
    return MDB_SUCCESS;
  });
  if (rc == MDB_SUCCESS && !m_writable) {
    rc = create_env(&m_writable, dir, MDB_NOTLS, initial_map_size);
    if (rc != MDB_SUCCESS && rc != fault::k_fault && !restore_locks()) {
      poison("its lock file's locks were lost when LMDB could not open it for writing (" +
                 describe(rc) + ")",
             false);
      return k_poisoned;
    }
  }
  Databases opened;
  if (rc == MDB_SUCCESS) {
    const auto open_in = [&](unsigned flags, unsigned create) {
      MDB_txn* txn = nullptr;
      int r = mdb_txn_begin(m_writable, nullptr, flags, &txn);
      if (r == MDB_SUCCESS)
        r = open_databases(txn, create, true, opened);
      if (r != MDB_SUCCESS) {
        if (txn)
          mdb_txn_abort(txn);
        return r;
      }
      return mdb_txn_commit(txn);
    };
    rc = fault::guarded([&] {
      int r = open_in(MDB_RDONLY, 0);
      if (r == MDB_MAP_RESIZED && (r = mdb_env_set_mapsize(m_writable, 0)) == MDB_SUCCESS)
        r = open_in(MDB_RDONLY, 0);
      return r == MDB_NOTFOUND ? open_in(0, MDB_CREATE) : r;
    });
  }
  if (rc == fault::k_fault)
    poison(fault::last_fault());
  else if (is_damage(rc))
    poison(describe(rc));
  if (rc != MDB_SUCCESS)
    return rc; // a writable environment that opened stays for the next write to try again
  m_read_env = env;
  env = m_writable;
  m_writable = nullptr;
  adopt(opened);
  reading_until_write.store(false, std::memory_order_release);
  return MDB_SUCCESS;
}

int LmdbStore::Env::grow_map(std::uint64_t bytes) {
  constexpr std::uint64_t k_slack = std::uint64_t(64) << 20;
  std::unique_lock<std::shared_mutex> lock(resize_mutex);
  MDB_envinfo info{};
  int fd = -1;
  struct stat st {};
  if (int rc = fault::guarded([&] { return mdb_env_info(env, &info); }); rc != MDB_SUCCESS)
    return rc;
  if (int rc = mdb_env_get_fd(env, &fd); rc != MDB_SUCCESS)
    return rc;
  if (::fstat(fd, &st) != 0)
    return errno;
  std::size_t grown = info.me_mapsize * 2;
  if (max_size) {
    std::uint64_t bound = map_bound(max_size);
    // A data file at or over the bound (filled under a larger limit, or none, then the limit
    // lowered): evicting copies the pages on its path, and a map at the bound has none left,
    // so nothing could ever be evicted. The map may then grow past the bound by room for that
    // and for this write; the evictions free far more than it, and the next process to open
    // the file alone compacts it (LmdbStore::open).
    constexpr std::uint64_t k_eviction_room = std::uint64_t(1) << 20;
    if (std::uint64_t(st.st_size) >= bound)
      bound = (std::uint64_t(st.st_size) + k_eviction_room + 2 * bytes + 0xffff) &
              ~std::uint64_t(0xffff);
    if (info.me_mapsize >= bound)
      return MDB_MAP_FULL;
    grown = std::min<std::uint64_t>(grown, bound);
  }
  const std::uint64_t cap = std::max<std::uint64_t>(
      initial_map_size, 4 * std::uint64_t(st.st_size) + 2 * bytes + k_slack);
  if (info.me_mapsize >= cap) {
    log::warn("user tier " + dir.string() + ": a write of " + format_size(bytes) +
              " into a data file of " + format_size(st.st_size) + " needs more than a map of " +
              format_size(info.me_mapsize) + "; the file must be damaged");
    return k_runaway;
  }
  log::info("user tier map full; growing it to " + format_size(grown));
  return fault::guarded([&] { return mdb_env_set_mapsize(env, grown); });
}

void LmdbStore::Env::poison(const std::string& why, bool damaged) {
  if (poisoned.exchange(true))
    return;
  release_lock_file_mutexes(dir, lock_fd);
  if (lock_fd >= 0) {
    // Closing any descriptor of the lock file drops every lock this process holds on it,
    // LMDB's included (see back_lock_file).
    ::close(lock_fd);
    lock_fd = -1;
  }
  if (!read_only && damaged)
    mark_damaged(cache);
  gate = EnvGate();
  given_up.store(true, std::memory_order_release);
  if (damaged)
    log::write_once(LogLevel::warn, "damaged:" + dir.string(),
                    "user tier " + dir.string() + " is damaged (" + why +
                        "); this process does not use it any more, and it is moved aside when "
                        "no process has it open");
  else
    log::write_once(LogLevel::warn, "unusable:" + dir.string(),
                    "user tier " + dir.string() + ": " + why +
                        "; this process does not use it any more");
}

// The file operations of the directory's data files, in one place.
namespace {

// Removes earlier files moved aside (kept for a post-mortem, not to grow without bound) and the
// damage marker. The lock file stays: the first process to open it takes LMDB's exclusive lock
// and initialises it afresh (mdb_env_setup_locks), so a process that faulted and still maps the
// old one holds nothing there (Env::poison released its locks and mutexes); deleting it would
// only make the next open create it unbacked.
void prepare_fresh_start(const CacheDir& cache) {
  for (const std::string& name : cache.names())
    if (name.rfind("data.mdb.corrupt-", 0) == 0)
      cache.remove(name);
  cache.remove(k_damage_marker);
}

} // namespace

void quarantine(const CacheDir& cache, const std::string& why) {
  prepare_fresh_start(cache);
  const std::string aside =
      "data.mdb.corrupt-" + std::to_string(detail::clock().wall_ns() / 1'000'000'000);
  cache.rename("data.mdb", aside);
  log::warn("user tier " + (cache.path() / "data.mdb").string() + " is damaged (" + why +
            "); moved it to " + (cache.path() / aside).string() + " and started a fresh one");
}

Expected<void> remove_data_files(const CacheDir& cache) {
  prepare_fresh_start(cache);
  if (!cache.remove("data.mdb") && errno != ENOENT)
    return Error(ErrorCode::io_error, "cannot remove " + (cache.path() / "data.mdb").string() +
                                          ": " + std::strerror(errno));
  return {};
}

void forsake_env(const fs::path& dir) {
  release_lock_file_mutexes(dir, -1);
}

int full_disk_or(int rc, const fs::path& dir, std::uint64_t bytes) {
  constexpr std::uint64_t k_margin = 1 << 20; // metadata pages, the free list
  struct statvfs st {};
  if (rc == EIO && ::statvfs(dir.c_str(), &st) == 0 &&
      std::uint64_t(st.f_bavail) * st.f_frsize < bytes + k_margin)
    return ENOSPC;
  return rc;
}

bool is_damage(int rc) {
  return rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID ||
         rc == MDB_VERSION_MISMATCH || rc == fault::k_fault || rc == k_runaway || rc == k_poisoned;
}

std::string describe(int rc) {
  if (rc == fault::k_fault)
    return "a fault inside LMDB, contained: the data file is damaged";
  if (rc == k_runaway)
    return "a write needed the map to grow without bound: the data file is damaged";
  if (rc == k_poisoned)
    return "the data file was found damaged earlier; this process does not use it any more";
  return mdb_strerror(rc);
}

Error lmdb_error(const std::string& what, int rc, const fs::path& dir) {
  ErrorCode code = ErrorCode::io_error;
  if (rc == MDB_MAP_FULL || rc == ENOSPC)
    code = ErrorCode::store_full;
  else if (rc == EACCES || rc == EROFS || rc == EPERM)
    code = ErrorCode::read_only;
  else if (is_damage(rc))
    code = ErrorCode::corrupt;
  return Error(code, what + " failed in " + dir.string() + ": " + describe(rc));
}

int open_databases(MDB_txn* txn, unsigned create, bool writer, LmdbStore::Env::Databases& out) {
  int r = mdb_dbi_open(txn, "entries", create, &out.entries);
  if (r == MDB_SUCCESS)
    r = mdb_dbi_open(txn, "counters", create, &out.counters);
  // Only writers keep use times and the stored size.
  if (r == MDB_SUCCESS && writer)
    r = mdb_dbi_open(txn, "access", create, &out.access);
  if (r == MDB_SUCCESS && writer)
    r = mdb_dbi_open(txn, "meta", create, &out.meta);
  if (r == MDB_SUCCESS && writer)
    r = mdb_dbi_open(txn, "records", create, &out.records);
  if (r == MDB_SUCCESS && writer)
    r = mdb_dbi_open(txn, "tuning", create, &out.tuning);
  return r;
}

int create_env(MDB_env** out, const fs::path& dir, unsigned flags, std::size_t map_size) {
  fault::install();
  int rc = mdb_env_create(out);
  if (rc != MDB_SUCCESS)
    return rc;
  mdb_env_set_assert(*out, &on_lmdb_assert);
  mdb_env_set_maxdbs(*out, 8);
  mdb_env_set_maxreaders(*out, k_max_readers);
  mdb_env_set_mapsize(*out, map_size);
  rc = fault::guarded([&] { return mdb_env_open(*out, dir.c_str(), flags, 0600); });
  if (rc == fault::k_fault) {
    forsake_env(dir);
    *out = nullptr;
  } else if (rc != MDB_SUCCESS) {
    mdb_env_close(*out);
    *out = nullptr;
  }
  return rc;
}

Expected<CacheDir> prepare_dir(const fs::path& dir, bool& read_only) {
  std::error_code ec;
  // The nearest existing ancestor (or the directory itself) must be a directory. One stat each,
  // and its answer kept: whether `dir` exists is whether the walk stopped at it.
  struct stat ancestor {};
  bool exists = false;
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    if (::stat(p.c_str(), &ancestor) == 0) {
      if (!S_ISDIR(ancestor.st_mode))
        return Error(ErrorCode::io_error,
                     "cache directory " + dir.string() + ": " + p.string() + " is not a directory");
      exists = p == dir;
      if (p != dir && !read_only && ancestor.st_uid != ::geteuid() && ancestor.st_uid != 0)
        return Error(ErrorCode::io_error,
                     "cache directory " + dir.string() + " does not exist, and " + p.string() +
                         " belongs to uid " + std::to_string(ancestor.st_uid) +
                         ": not creating it (it would belong to uid " +
                         std::to_string(::geteuid()) + ", and be useless to its owner)");
      break;
    }
    if (p == p.parent_path())
      break;
  }
  if (!exists) {
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
  auto cache = CacheDir::open(dir);
  if (!cache || read_only)
    return cache;
  // A cache shared with other users is a read-only package or a remote tier, never someone
  // else's LMDB: whoever can write it can hand this user a binary to run. Nor does a process
  // create anything in another user's cache (root's included): its files would be useless to
  // their owner.
  if (auto problem = foreign_directory_problem(cache->status())) {
    log::write_once(LogLevel::warn, "ro:" + dir.string(),
                    "cache directory " + dir.string() + " is " + *problem +
                        "; using it read-only (use a directory of your own, mode 0700)");
    read_only = true;
  } else if (::faccessat(cache->fd(), ".", W_OK, AT_EACCESS) != 0) {
    log::write_once(LogLevel::warn, "ro:" + dir.string(),
                    "cache directory " + dir.string() + " is not writable (" +
                        std::strerror(errno) + "); using it read-only");
    read_only = true;
  }
  return cache;
}

Expected<std::shared_ptr<LmdbStore::Env>> open_env(const CacheDir& cache, bool read_only,
                                                   const LmdbStore::Options& options) {
  const fs::path& dir = cache.path();
  if (const std::string unsafe = unsafe_files(cache); !unsafe.empty())
    return Error(ErrorCode::io_error, unsafe +
                                          "; jitcache never follows one in its cache directory, "
                                          "so it does not use the user tier there");
  auto gate = EnvGate::enter_shared(cache, !read_only, k_gate_wait);
  if (!gate)
    return std::move(gate).error();
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto env = std::make_shared<LmdbStore::Env>();
    env->dir = dir;
    env->initial_map_size = options.map_size;
    env->cache = cache;
    env->generation = fork_generation();
    if (!read_only) {
      auto lock_fd = make_files(cache);
      const auto lock = cache.stat("lock.mdb");
      if (!lock_fd && lock && lock->st_uid != ::geteuid() &&
          gate->try_exclusive(std::chrono::milliseconds(0))) {
        // Another user's lock file in this user's directory (left by an older jitcache run by
        // root): unusable here, and nobody has it open now. Replace it.
        cache.remove("lock.mdb");
        gate->share();
        lock_fd = make_files(cache);
      }
      if (lock_fd) {
        env->lock_fd = *lock_fd;
      } else {
        log::write_once(LogLevel::warn, "ro:" + dir.string(),
                        lock_fd.error().message + "; using the user tier read-only");
        read_only = true;
      }
    }
    env->read_only = read_only;
    // A reader without a usable lock file (none yet, or not fully backed) opens LMDB with
    // MDB_NOLOCK: it creates and writes nothing. The race that leaves: a writer (one that
    // starts meanwhile and makes the lock file, or one running with a lock file this reader may
    // not use), not seeing this reader in its reader table, may reuse pages of the reader's
    // snapshot (from its second commit on). That is acceptable: every entry is
    // verified (checksum) before it is used, so a reused page reads as damage - a miss, never a
    // wrong binary - and a reader's transactions are short (one lookup, one listing). The gate
    // does not exclude it (a reader takes it shared, as writers do, when it exists): only
    // quarantine and compaction take it exclusively, and they replace the file, which a reader
    // keeps mapped, rather than rewrite it.
    if (read_only)
      env->lock_fd = usable_lock_file(cache);
    const auto data = cache.stat("data.mdb");
    if (read_only && (!data || data->st_size == 0))
      return Error(ErrorCode::io_error, "no user tier in " + dir.string() + " yet");
    // A writer opens an environment that exists read-only until its first write: a process
    // that only hits never allocates LMDB's write buffers (see Env::reading_until_write).
    env->reading_until_write = !read_only && data && data->st_size > 0;
    const unsigned flags = MDB_NOTLS | (read_only || env->reading_until_write ? MDB_RDONLY : 0u) |
                           (env->lock_fd < 0 ? MDB_NOLOCK : 0u);
    int rc = create_env(&env->env, dir, flags, options.map_size);
    if (rc != MDB_SUCCESS && read_only && (rc == EACCES || rc == EROFS)) {
      // A lock file this process may not write (another user's cache), or a read-only
      // filesystem: nobody can write there either.
      rc = create_env(&env->env, dir, flags | MDB_NOLOCK, options.map_size);
    }
    if (rc == MDB_SUCCESS && !opened_what_was_checked(env->env, cache, env->lock_fd))
      return Error(ErrorCode::io_error, "user tier " + dir.string() +
                                            ": data.mdb or lock.mdb was replaced while it was "
                                            "being opened; not using it");
    std::string damage;
    if (rc == fault::k_fault)
      damage = fault::last_fault();
    else if (is_damage(rc))
      damage = describe(rc);
    else if (rc == MDB_SUCCESS)
      damage = integrity_problem(env->env, dir);
    if (rc == MDB_SUCCESS && damage.empty())
      damage = damage_after_unclean_end(cache, *gate, env->pages_checked);
    if (!damage.empty()) {
      env.reset();
      if (read_only)
        return Error(ErrorCode::corrupt,
                     "user tier " + dir.string() + " is damaged (" + damage + "); not using it");
      if (attempt == 0 && gate->try_exclusive(k_gate_wait)) {
        quarantine(cache, damage);
        gate->share();
        continue;
      }
      return Error(ErrorCode::corrupt, "user tier " + dir.string() + " is damaged (" + damage +
                                           ") and other processes have it open; not using it");
    }
    if (rc != MDB_SUCCESS) {
      if (read_only && rc == ENOENT)
        return Error(ErrorCode::io_error, "no user tier in " + dir.string() + " yet");
      return lmdb_error("mdb_env_open", rc, dir);
    }
    MDB_stat st{};
    if (mdb_env_stat(env->env, &st) == MDB_SUCCESS)
      env->page_size = st.ms_psize;
    int stale = 0;
    mdb_reader_check(env->env, &stale); // clear reader slots of dead processes
    if (stale > 0)
      log::info("cleared " + std::to_string(stale) + " reader slot(s) of dead processes in " +
                dir.string());
    const auto open_dbis = [&](MDB_txn* txn, unsigned create) {
      LmdbStore::Env::Databases opened;
      const int r = open_databases(txn, create, !read_only, opened);
      if (r == MDB_SUCCESS)
        env->adopt(opened);
      return r;
    };
    // Where every database exists (each open but a new tier's first), they are opened in a read
    // transaction: a process that only hits never takes LMDB's writer mutex, which another
    // process's store holds for as long as its write and its sync take. A writer creates what
    // is missing in a write transaction.
    rc = env->transact(false, [&](MDB_txn* txn) { return open_dbis(txn, 0); });
    if (rc == MDB_NOTFOUND && !read_only)
      rc = env->transact(true, [&](MDB_txn* txn) { return open_dbis(txn, MDB_CREATE); });
    if (rc == MDB_SUCCESS) {
      env->has_dbs = true;
    } else if (is_damage(rc) && !read_only && attempt == 0) {
      env.reset(); // poisoned by transact: nothing of LMDB's is closed
      if (gate->try_exclusive(k_gate_wait)) {
        quarantine(cache, describe(rc));
        gate->share();
        continue;
      }
      return lmdb_error("mdb_dbi_open", rc, dir);
    } else if (!(read_only && rc == MDB_NOTFOUND)) {
      return lmdb_error("mdb_dbi_open", rc, dir);
    }
    // Records came later than the other databases: a read-only open of an environment no
    // writer of this version has opened goes on without them.
    if (env->has_dbs && read_only) {
      env->has_records = env->transact(false, [&](MDB_txn* txn) {
        return mdb_dbi_open(txn, "records", 0, &env->records);
      }) == MDB_SUCCESS;
      env->has_tuning = env->transact(false, [&](MDB_txn* txn) {
        return mdb_dbi_open(txn, "tuning", 0, &env->tuning);
      }) == MDB_SUCCESS;
    } else {
      env->has_records = env->has_tuning = env->has_dbs;
    }
    env->gate = std::move(*gate);
    return env;
  }
  return Error(ErrorCode::corrupt, "cannot open the user tier in " + dir.string());
}

} // namespace jitcache::detail
