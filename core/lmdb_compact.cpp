// LmdbStore::compact: rewriting the data file without its free pages, safely.
#include "core/lmdb_env.hpp"
#include "core/log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace jitcache {

namespace fs = std::filesystem;

namespace {

bool sync_path(const fs::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0)
    return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

} // namespace

Expected<LmdbStore::Compacted> LmdbStore::compact(const fs::path& dir) {
  Compacted result;
  std::error_code ec;
  const fs::path data = dir / "data.mdb";
  result.file_bytes_before = fs::file_size(data, ec);
  if (ec) {
    result.reason = "no user tier in " + dir.string();
    return result;
  }
  result.file_bytes_after = result.file_bytes_before;
  // Alone, or not at all: a process with the environment open keeps the old file mapped and
  // its lock file tied to it (see EnvGate).
  auto gate = EnvGate::enter_shared(dir, std::chrono::milliseconds(0));
  if (!gate || !gate->held()) {
    result.reason = gate ? "the cache directory is read-only" : gate.error().message;
    return result;
  }
  if (!gate->try_exclusive(std::chrono::milliseconds(0))) {
    result.reason = "other processes have the user tier open (freed pages are reused anyway)";
    return result;
  }
  const fs::path work = dir / ("compact." + std::to_string(::getpid()));
  fs::remove_all(work, ec);
  if (!fs::create_directory(work, ec) || ec)
    return Error(ErrorCode::io_error, "cannot create " + work.string() + ": " + ec.message());
  MDB_env* env = nullptr;
  int rc = create_env(&env, dir, MDB_NOTLS | MDB_RDONLY, 0);
  if (rc == MDB_SUCCESS) {
    // The copy walks every page: where one is damaged, LMDB faults or asserts.
    rc = fault::guarded([&] { return mdb_env_copy2(env, work.c_str(), MDB_CP_COMPACT); });
    if (rc == fault::k_fault)
      forsake_env(dir); // never closed: its state is unknown
    else
      mdb_env_close(env);
  }
  if (is_damage(rc)) {
    // Alone with the file (the gate is exclusive): it goes aside now.
    fs::remove_all(work, ec);
    quarantine(dir, rc == fault::k_fault ? fault::last_fault() : describe(rc));
    result.reason = "the data file was damaged: moved aside, a fresh one is started";
    result.file_bytes_after = 0;
    return result;
  }
  const fs::path copy = work / "data.mdb";
  if (rc == MDB_SUCCESS && (!sync_path(copy, O_RDONLY) || ::chmod(copy.c_str(), 0600) != 0))
    rc = errno;
  if (rc != MDB_SUCCESS) {
    fs::remove_all(work, ec);
    return lmdb_error("compaction", rc, dir);
  }
  // The lock file goes too: the next process to open rebuilds it from the new data file.
  fs::rename(copy, data, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove_all(work, ec);
    return Error(ErrorCode::io_error, "cannot replace " + data.string() + ": " + why);
  }
  fs::remove(dir / "lock.mdb", ec);
  sync_path(dir, O_RDONLY | O_DIRECTORY);
  fs::remove_all(work, ec);
  result.done = true;
  result.file_bytes_after = fs::file_size(data, ec);
  log::info("compacted " + data.string() + " from " + format_size(result.file_bytes_before) +
            " to " + format_size(result.file_bytes_after));
  return result;
}

} // namespace jitcache
