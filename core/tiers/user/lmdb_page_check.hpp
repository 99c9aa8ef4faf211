#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace jitcache::detail {

/// What check_lmdb_pages() found.
struct PageCheck {
  enum class Verdict {
    ok,        ///< every check passed
    damaged,   ///< `page` and `problem` say what is wrong first
    unchecked, ///< nothing was concluded: the file cannot be read, or the snapshot asked for has
               ///< been replaced by newer commits (`problem` says which); not a sign of damage
  };
  Verdict verdict = Verdict::unchecked;
  std::uint64_t page = 0;         ///< the page of the first problem (damaged only)
  std::string problem;            ///< "page N: what" (damaged), the reason (unchecked), empty (ok)
  std::uint64_t txnid = 0;        ///< the transaction whose meta page was walked
  std::uint64_t pages_read = 0;   ///< pages (or overflow headers) read, for the cost
  std::uint64_t entries = 0;      ///< leaf entries of every tree walked
  std::uint64_t unused_pages = 0; ///< pages neither in a tree nor in the free list (leaked)
  bool ok() const { return verdict == Verdict::ok; }
  bool damaged() const { return verdict == Verdict::damaged; }
};

/// What check_lmdb_pages() reads.
struct PageCheckOptions {
  /// The transaction whose meta page is walked; nullopt: the newest (LMDB's choice).
  std::optional<std::uint64_t> txnid;
  /// Whether the first page of every overflow run (a big value) is read, to check its flags
  /// and page count; without, the runs are still checked against the file, the last page and
  /// every other page, but the check reads only tree pages (about 40 times fewer for jitcache's
  /// entries).
  bool overflow_headers = true;
};

/// Checks the LMDB data file `data_file` page by page, trusting none of it: it is read with
/// pread (no mapping, so a short file is an error, never SIGBUS) and every number in it is
/// bounds-checked before it is used. Only what jitcache writes is accepted: 64-bit LMDB 0.9
/// files (data version 1), no duplicate-sorted databases.
///
/// Checks, stopping at the first problem: both meta pages (flags, magic, version, page size,
/// last page within the file); from the newest one (the one LMDB would use), or from the one
/// of transaction `options.txnid` when given: the free database, the main database and every named
/// database in it are walked: page numbers within the file and the meta's last page, the page
/// number each page names itself by, page flags valid for the position (branch above the
/// leaves, leaves at md_depth, overflow pages only under a big value), mp_lower/mp_upper
/// bounds, node offsets and sizes within the page, key sizes, overflow runs consistent with
/// their value sizes and the file, entry and page counts equal to the database's statistics;
/// the free lists are sorted, bounded and within the last page; no page is used twice (a
/// cycle, two trees sharing a page, or a page both in use and free).
///
/// With a txnid, the caller must hold a read transaction of that id in an environment of this
/// file for the whole call: it keeps the pages of that snapshot from being reused by writers
/// meanwhile. If a writer has already replaced that meta page, the result is unchecked.
///
/// Cost: one pread per tree page and one 16-byte pread per big value (unless
/// options.overflow_headers is false); see bench/core/bench_page_check.cpp. Thread-safe (no shared
/// state); never throws except std::bad_alloc.
PageCheck check_lmdb_pages(const std::filesystem::path& data_file,
                           const PageCheckOptions& options = {});

} // namespace jitcache::detail
