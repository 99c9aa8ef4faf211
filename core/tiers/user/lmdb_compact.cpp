// LmdbStore::compact: rewriting the data file without its free pages, safely.
#include "core/support/log.hpp"
#include "core/tiers/user/lmdb_env.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace jitcache::detail {

namespace fs = std::filesystem;

Expected<LmdbStore::Compacted> LmdbStore::compact(const fs::path& dir) {
  Compacted result;
  auto cache = CacheDir::open(dir);
  const auto data = cache ? cache->stat("data.mdb") : std::nullopt;
  if (!data || data->st_size == 0) {
    result.reason = "no user tier in " + dir.string();
    return result;
  }
  result.file_bytes_before = data->st_size;
  result.file_bytes_after = result.file_bytes_before;
  if (!S_ISREG(data->st_mode) || data->st_nlink != 1) {
    result.reason = (dir / "data.mdb").string() + " is not a regular file of one link";
    return result;
  }
  if (auto problem = foreign_directory_problem(cache->status())) {
    result.reason = "the cache directory is " + *problem;
    return result;
  }
  // Alone, or not at all: a process with the environment open keeps the old file mapped and
  // its lock file tied to it (see EnvGate).
  auto gate = EnvGate::enter_alone(*cache);
  if (!gate) {
    result.reason = gate.error().message; // not compacted: freed pages are reused anyway
    return result;
  }
  // The copy is written through a descriptor of ours (made with O_EXCL, never through a link),
  // not by LMDB at a path. One left by a compaction that was killed is ours to remove: the gate
  // is held exclusively.
  const std::string copy = "data.mdb.compact";
  cache->remove(copy);
  auto out = cache->open_file(copy, O_WRONLY | O_CREAT);
  if (!out)
    return std::move(out).error();
  MDB_env* env = nullptr;
  // No lock file is used or made: with the gate held exclusively, no process has the
  // environment open.
  int rc = create_env(&env, dir, MDB_NOTLS | MDB_RDONLY | MDB_NOLOCK, 0);
  if (rc == MDB_SUCCESS) {
    // The copy walks every page: where one is damaged, LMDB faults or asserts.
    rc = fault::guarded([&] { return mdb_env_copyfd2(env, *out, MDB_CP_COMPACT); });
    if (rc == fault::k_fault)
      forsake_env(dir); // never closed: its state is unknown
    else
      mdb_env_close(env);
  }
  if (is_damage(rc)) {
    // Alone with the file (the gate is exclusive): it goes aside now.
    ::close(*out);
    cache->remove(copy);
    quarantine(*cache, rc == fault::k_fault ? fault::last_fault() : describe(rc));
    result.reason = "the data file was damaged: moved aside, a fresh one is started";
    result.file_bytes_after = 0;
    return result;
  }
  if (rc == MDB_SUCCESS && ::fsync(*out) != 0)
    rc = errno;
  ::close(*out);
  if (rc == MDB_SUCCESS && !cache->rename(copy, "data.mdb"))
    rc = errno;
  if (rc != MDB_SUCCESS) {
    cache->remove(copy);
    if (rc == ENOSPC || full_disk_or(rc, dir, result.file_bytes_before) == ENOSPC) {
      result.reason = "the disk is full: no room for the compacted copy (the data file is kept)";
      return result;
    }
    return lmdb_error("compaction", rc, dir);
  }
  // The lock file stays (see quarantine in lmdb_env.cpp): the next process to open the
  // environment initialises it afresh for the new data file.
  cache->sync();
  result.done = true;
  if (const auto after = cache->stat("data.mdb"))
    result.file_bytes_after = after->st_size;
  log::info("compacted " + (dir / "data.mdb").string() + " from " +
            format_size(result.file_bytes_before) + " to " + format_size(result.file_bytes_after));
  return result;
}

} // namespace jitcache::detail
