#include "core/tiers/user/lmdb_health.hpp"

#include "core/tiers/user/lmdb_page_check.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>

namespace jitcache::detail {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_clean_marker = "closed";
// Up to this size the check before the first write reads the overflow runs' headers too
// (about 1 ms per 1,000 entries, measured by bench/core/bench_page_check); above, tree pages only.
constexpr std::uintmax_t k_full_write_check_bytes = std::uintmax_t(64) << 20;
// A snapshot replaced by other writers while it was being read is checked again, this often.
constexpr int k_snapshot_attempts = 3;

} // namespace

std::string damage_after_unclean_end(const CacheDir& cache, EnvGate& gate, bool& checked) {
  checked = false;
  if (!gate.try_exclusive(std::chrono::milliseconds(0)))
    return {}; // other processes have it open: the first of them checked it
  // The marker is taken away before this process's first write (check_before_first_write), not
  // here: a process that only reads cannot leave the file half written, and a hit in a fresh
  // process pays no file removal.
  const bool clean = cache.stat(k_clean_marker).has_value();
  if (!clean) {
    const PageCheck check = check_lmdb_pages(cache.path() / "data.mdb");
    checked = check.ok();
    if (check.damaged())
      return check.problem; // the gate stays exclusive for the caller's quarantine
  }
  gate.share();
  return {};
}

void mark_clean_end(const CacheDir& cache, EnvGate& gate) {
  if (cache.stat(k_damage_marker) || !gate.try_exclusive(std::chrono::milliseconds(0)))
    return;
  if (auto fd = cache.open_file(k_clean_marker, O_WRONLY | O_CREAT))
    ::close(*fd);
}

int check_before_first_write(LmdbStore::Env& e) {
  std::call_once(e.write_check_once, [&] {
    e.cache.remove(k_clean_marker); // until the last process closes cleanly (mark_clean_end)
    if (e.pages_checked)
      return;
    // Under a read transaction: its snapshot's pages cannot be reused by writers meanwhile.
    // A problem seen twice, in two snapshots, is damage; once may be a meta page read while a
    // writer was replacing it.
    int seen = 0;
    PageCheck check;
    std::error_code ec;
    const bool overflow_headers = fs::file_size(e.dir / "data.mdb", ec) <= k_full_write_check_bytes;
    for (int attempt = 0; attempt < k_snapshot_attempts && seen < 2; ++attempt) {
      e.read([&](MDB_txn* txn) {
        check = check_lmdb_pages(e.dir / "data.mdb", {mdb_txn_id(txn), overflow_headers});
        return MDB_SUCCESS;
      });
      if (check.ok())
        break;
      seen += check.damaged();
    }
    e.pages_checked = seen < 2;
    if (!e.pages_checked)
      e.poison(check.problem); // one warning naming the page; the next open moves it aside
  });
  return e.pages_checked ? MDB_SUCCESS : MDB_CORRUPTED;
}

} // namespace jitcache::detail
