// The LMDB page verifier. The layout is LMDB 0.9's (libraries/liblmdb/mdb.c: MDB_page,
// MDB_node, MDB_meta, MDB_db) on a 64-bit little-endian host; it is read here field by field
// from bytes, never by casting the file's bytes to LMDB's structures.
#include "core/tiers/user/lmdb_page_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace jitcache::detail {

namespace {

static_assert(sizeof(void*) == 8, "the page verifier reads 64-bit LMDB files only");

// MDB_page: pgno (8), pad (2), flags (2), lower (2), upper (2) | overflow page count (4).
constexpr std::uint32_t k_page_header = 16;
constexpr std::uint16_t k_branch = 0x01, k_leaf = 0x02, k_overflow = 0x04, k_meta = 0x08,
                        k_dirty = 0x10;
// MDB_node: lo (2), hi (2), flags (2), key size (2), then the key and the data.
constexpr std::uint32_t k_node_header = 8;
// Node flags; any other (F_DUPDATA: no database here sorts duplicates) is damage.
constexpr std::uint16_t k_big_data = 0x01, k_sub_data = 0x02;
// MDB_meta, after the page header: magic (4), version (4), address (8), map size (8),
// two MDB_db (48 each: pad = page size for the first, flags, depth, branch, leaf, overflow
// pages, entries, root), last page (8), txnid (8).
constexpr std::uint32_t k_magic = 0xBEEFC0DE, k_data_version = 1;
constexpr std::uint32_t k_meta_dbs = k_page_header + 24, k_db_size = 48;
constexpr std::uint32_t k_meta_last_page = k_meta_dbs + 2 * k_db_size;
constexpr std::uint32_t k_meta_txnid = k_meta_last_page + 8;
constexpr std::uint32_t k_meta_end = k_meta_txnid + 8;
constexpr std::uint64_t k_invalid_page = ~std::uint64_t(0);
constexpr std::uint32_t k_max_key = 511; // MDB_MAXKEYSIZE
constexpr unsigned k_max_depth = 64;     // a B-tree of fan-out two this deep fills 2^63 pages
constexpr std::uint16_t k_dupsort = 0x04;

template <typename T> T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Db {
  std::uint16_t flags = 0, depth = 0;
  std::uint64_t branch = 0, leaf = 0, overflow = 0, entries = 0, root = k_invalid_page;
};

Db load_db(const unsigned char* p) {
  Db db;
  db.flags = load<std::uint16_t>(p + 4);
  db.depth = load<std::uint16_t>(p + 6);
  db.branch = load<std::uint64_t>(p + 8);
  db.leaf = load<std::uint64_t>(p + 16);
  db.overflow = load<std::uint64_t>(p + 24);
  db.entries = load<std::uint64_t>(p + 32);
  db.root = load<std::uint64_t>(p + 40);
  return db;
}

struct Meta {
  std::uint32_t page_size = 0;
  Db free, main;
  std::uint64_t last_page = 0, txnid = 0;
};

// A named database found in the main one: walked after it.
struct Named {
  Db db;
  std::uint64_t page; // the main database's leaf holding it, for messages
};

enum class Tree { free, main, named };

class Walker {
public:
  Walker(int fd, std::uint64_t file_pages, const Meta& meta, bool overflow_headers,
         PageCheck& result)
      : m_fd(fd), m_file_pages(file_pages), m_meta(meta), m_overflow_headers(overflow_headers),
        m_result(result), m_used((meta.last_page + 64) / 64, 0), m_pages(k_max_depth + 1) {}

  bool walk(const Db& db, Tree tree, std::uint64_t named_at) {
    Counts counts;
    if (db.root == k_invalid_page) {
      if (db.depth != 0 || db.branch || db.leaf || db.overflow || db.entries)
        return fail(named_at, "an empty database with non-zero statistics");
      return true;
    }
    if (db.depth == 0 || db.depth > k_max_depth)
      return fail(named_at, "database depth " + std::to_string(db.depth));
    // Duplicate-sorted databases keep sub-pages this walk does not read; jitcache has none.
    // (The free database's flags hold the environment's flags too.)
    if (tree != Tree::free && (db.flags & k_dupsort))
      return fail(named_at, "a duplicate-sorted database (flags " + std::to_string(db.flags) +
                                "), which jitcache never makes");
    if (!page(db.root, 1, db, tree, counts))
      return false;
    if (counts.branch != db.branch || counts.leaf != db.leaf || counts.overflow != db.overflow ||
        counts.entries != db.entries)
      return fail(db.root, "the tree holds " + std::to_string(counts.entries) + " entries in " +
                               std::to_string(counts.branch) + "/" + std::to_string(counts.leaf) +
                               "/" + std::to_string(counts.overflow) +
                               " branch/leaf/overflow pages; its database says " +
                               std::to_string(db.entries) + " in " + std::to_string(db.branch) +
                               "/" + std::to_string(db.leaf) + "/" + std::to_string(db.overflow));
    m_result.entries += counts.entries;
    return true;
  }

  std::vector<Named>& named() { return m_named; }

  std::uint64_t used_pages() const {
    std::uint64_t n = 0;
    for (std::uint64_t word : m_used)
      n += __builtin_popcountll(word);
    return n;
  }

private:
  struct Counts {
    std::uint64_t branch = 0, leaf = 0, overflow = 0, entries = 0;
  };

  bool fail(std::uint64_t page, const std::string& what) {
    m_result.verdict = PageCheck::Verdict::damaged;
    m_result.page = page;
    m_result.problem = "page " + std::to_string(page) + ": " + what;
    return false;
  }

  // Pages [first, first + count) become used; each must exist and not be used yet.
  bool claim(std::uint64_t first, std::uint64_t count, std::uint64_t from, const char* what) {
    if (first < 2 || count > m_meta.last_page || first > m_meta.last_page + 1 - count)
      return fail(from, std::string(what) + " " + std::to_string(first) +
                            (count > 1 ? "+" + std::to_string(count) : "") +
                            " lies outside pages 2.." + std::to_string(m_meta.last_page));
    for (std::uint64_t p = first; p < first + count; ++p) {
      std::uint64_t& word = m_used[p / 64];
      const std::uint64_t bit = std::uint64_t(1) << (p % 64);
      if (word & bit)
        return fail(from, std::string(what) + " " + std::to_string(p) +
                              " is used twice (a cycle, or shared between trees or with the "
                              "free list)");
      word |= bit;
    }
    return true;
  }

  bool read(std::uint64_t page, std::size_t bytes, unsigned char* out) {
    ++m_result.pages_read;
    const ssize_t n = ::pread(m_fd, out, bytes, static_cast<off_t>(page * m_meta.page_size));
    return n == static_cast<ssize_t>(bytes);
  }

  bool page(std::uint64_t pgno, unsigned depth, const Db& db, Tree tree, Counts& counts) {
    if (!claim(pgno, 1, pgno, "page"))
      return false;
    if (pgno >= m_file_pages)
      return fail(pgno, "beyond the end of the file");
    std::vector<unsigned char>& buf = m_pages[depth];
    const std::uint32_t psize = m_meta.page_size;
    buf.resize(psize);
    if (!read(pgno, psize, buf.data()))
      return fail(pgno, std::string("cannot be read: ") + std::strerror(errno));
    const unsigned char* p = buf.data();
    if (load<std::uint64_t>(p) != pgno)
      return fail(pgno, "names itself page " + std::to_string(load<std::uint64_t>(p)));
    const std::uint16_t flags = load<std::uint16_t>(p + 10) & ~k_dirty;
    const bool leaf = depth == db.depth;
    if (flags != (leaf ? k_leaf : k_branch))
      return fail(pgno, "flags " + std::to_string(flags) + " where a " +
                            (leaf ? "leaf" : "branch") + " page belongs (depth " +
                            std::to_string(depth) + " of " + std::to_string(db.depth) + ")");
    const std::uint16_t lower = load<std::uint16_t>(p + 12), upper = load<std::uint16_t>(p + 14);
    if (lower < k_page_header || lower > upper || upper > psize || (lower - k_page_header) % 2)
      return fail(pgno, "free space bounds " + std::to_string(lower) + ".." +
                            std::to_string(upper) + " outside the page");
    const unsigned keys = (lower - k_page_header) / 2;
    if (keys == 0)
      return fail(pgno, "no nodes");
    ++(leaf ? counts.leaf : counts.branch);
    for (unsigned i = 0; i < keys; ++i) {
      const std::uint16_t at = load<std::uint16_t>(p + k_page_header + 2 * i);
      if (at < upper || at % 2 || std::uint32_t(at) + k_node_header > psize)
        return fail(pgno, "node " + std::to_string(i) + " at offset " + std::to_string(at) +
                              " outside the node area " + std::to_string(upper) + ".." +
                              std::to_string(psize));
      const unsigned char* node = p + at;
      const std::uint32_t lo = load<std::uint16_t>(node), hi = load<std::uint16_t>(node + 2);
      const std::uint16_t node_flags = load<std::uint16_t>(node + 4);
      const std::uint32_t key_size = load<std::uint16_t>(node + 6);
      const std::uint32_t key_end = at + k_node_header + key_size;
      if (key_size > k_max_key || key_end > psize)
        return fail(pgno,
                    "node " + std::to_string(i) + " key of " + std::to_string(key_size) + " bytes");
      if (!leaf) {
        const std::uint64_t child =
            lo | (std::uint64_t(hi) << 16) | (std::uint64_t(node_flags) << 32);
        if (!page(child, depth + 1, db, tree, counts))
          return false;
        continue;
      }
      ++counts.entries;
      const std::uint32_t size = lo | (hi << 16);
      if (node_flags & ~(k_big_data | k_sub_data) || node_flags == (k_big_data | k_sub_data) ||
          (node_flags & k_sub_data && tree != Tree::main))
        return fail(pgno, "node " + std::to_string(i) + " flags " + std::to_string(node_flags));
      if (tree == Tree::free &&
          (key_size != 8 || load<std::uint64_t>(node + k_node_header) > m_meta.txnid))
        return fail(pgno, "free list node " + std::to_string(i) + " has no valid transaction");
      if (node_flags & k_big_data) {
        if (key_end + 8 > psize)
          return fail(pgno, "node " + std::to_string(i) + " overflow page number past the page");
        if (!overflow(pgno, load<std::uint64_t>(p + key_end), size, tree, counts))
          return false;
        continue;
      }
      if (std::uint64_t(key_end) + size > psize)
        return fail(pgno, "node " + std::to_string(i) + " value of " + std::to_string(size) +
                              " bytes past the page");
      if (node_flags & k_sub_data) {
        if (size != k_db_size)
          return fail(pgno, "named database record of " + std::to_string(size) + " bytes");
        m_named.push_back({load_db(p + key_end), pgno});
      } else if (tree == Tree::free && !free_list(pgno, p + key_end, size)) {
        return false;
      }
    }
    return true;
  }

  bool overflow(std::uint64_t from, std::uint64_t first, std::uint32_t size, Tree tree,
                Counts& counts) {
    const std::uint32_t psize = m_meta.page_size;
    const std::uint64_t count = (k_page_header - 1 + std::uint64_t(size)) / psize + 1;
    if (!claim(first, count, from, "overflow page"))
      return false;
    if (first + count > m_file_pages)
      return fail(from, "overflow pages " + std::to_string(first) + "+" + std::to_string(count) +
                            " beyond the end of the file");
    counts.overflow += count;
    if (tree != Tree::free && !m_overflow_headers)
      return true;
    // Only a free list is read whole; a value's header says enough about the run.
    std::vector<unsigned char> bytes(tree == Tree::free ? count * psize : k_page_header);
    if (!read(first, bytes.size(), bytes.data()))
      return fail(first, std::string("cannot be read: ") + std::strerror(errno));
    if (load<std::uint64_t>(bytes.data()) != first ||
        (load<std::uint16_t>(bytes.data() + 10) & ~k_dirty) != k_overflow ||
        load<std::uint32_t>(bytes.data() + 12) != count)
      return fail(first, "not the overflow run of " + std::to_string(count) +
                             " pages its value of " + std::to_string(size) +
                             " bytes needs (from page " + std::to_string(from) + ")");
    return tree != Tree::free || free_list(first, bytes.data() + k_page_header, size);
  }

  // An IDL: a count, then that many page numbers in descending order (room may be left over).
  bool free_list(std::uint64_t at, const unsigned char* bytes, std::uint32_t size) {
    if (size < 8 || size % 8)
      return fail(at, "free list of " + std::to_string(size) + " bytes");
    const std::uint64_t n = load<std::uint64_t>(bytes);
    if (n > size / 8 - 1)
      return fail(at, "free list of " + std::to_string(n) + " pages in " + std::to_string(size) +
                          " bytes");
    std::uint64_t previous = k_invalid_page;
    for (std::uint64_t i = 1; i <= n; ++i) {
      const std::uint64_t free_page = load<std::uint64_t>(bytes + 8 * i);
      if (free_page >= previous)
        return fail(at, "free list not in descending order at " + std::to_string(free_page));
      previous = free_page;
      if (!claim(free_page, 1, at, "free page"))
        return false;
    }
    return true;
  }

  int m_fd;
  std::uint64_t m_file_pages;
  const Meta& m_meta;
  bool m_overflow_headers;
  PageCheck& m_result;
  std::vector<std::uint64_t> m_used;               // a bit per page
  std::vector<std::vector<unsigned char>> m_pages; // a page buffer per depth
  std::vector<Named> m_named;
};

// Reads meta page `index` (its page size taken from meta 0, as LMDB does). Empty on success,
// else the problem.
std::string read_meta(int fd, unsigned index, std::uint32_t page_size, Meta& meta) {
  unsigned char p[k_meta_end];
  const ssize_t n = ::pread(fd, p, sizeof p, off_t(index) * page_size);
  if (n != ssize_t(sizeof p))
    return "too short for a meta page";
  if (load<std::uint64_t>(p) != index || !(load<std::uint16_t>(p + 10) & k_meta))
    return "not a meta page";
  if (load<std::uint32_t>(p + k_page_header) != k_magic)
    return "no LMDB magic";
  if (load<std::uint32_t>(p + k_page_header + 4) != k_data_version)
    return "LMDB data version " + std::to_string(load<std::uint32_t>(p + k_page_header + 4));
  meta.page_size = load<std::uint32_t>(p + k_meta_dbs); // the free database's md_pad
  meta.free = load_db(p + k_meta_dbs);
  meta.main = load_db(p + k_meta_dbs + k_db_size);
  meta.last_page = load<std::uint64_t>(p + k_meta_last_page);
  meta.txnid = load<std::uint64_t>(p + k_meta_txnid);
  if (meta.page_size < 512 || meta.page_size > 65536 || (meta.page_size & (meta.page_size - 1)))
    return "page size " + std::to_string(meta.page_size);
  if (page_size && meta.page_size != page_size)
    return "page size " + std::to_string(meta.page_size) + ", meta page 0 says " +
           std::to_string(page_size);
  if (meta.last_page < 1)
    return "last page " + std::to_string(meta.last_page);
  return {};
}

} // namespace

PageCheck check_lmdb_pages(const std::filesystem::path& data_file,
                           const PageCheckOptions& options) {
  const std::optional<std::uint64_t>& txnid = options.txnid;
  PageCheck result;
  const int fd = ::open(data_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    result.problem = "cannot open " + data_file.string() + ": " + std::strerror(errno);
    return result;
  }
  struct stat st {};
  ::fstat(fd, &st);
  if (st.st_size == 0) { // what LMDB makes a new environment of
    ::close(fd);
    result.verdict = PageCheck::Verdict::ok;
    return result;
  }
  const auto damaged = [&](std::uint64_t page, const std::string& what) {
    result.verdict = PageCheck::Verdict::damaged;
    result.page = page;
    result.problem = "page " + std::to_string(page) + ": " + what;
  };
  Meta metas[2];
  for (unsigned i = 0; i < 2 && result.problem.empty(); ++i)
    if (std::string problem = read_meta(fd, i, i ? metas[0].page_size : 0, metas[i]);
        !problem.empty())
      damaged(i, problem);
  if (result.problem.empty()) {
    int index = metas[0].txnid < metas[1].txnid; // LMDB's choice: the newest
    if (txnid)
      index = metas[0].txnid == *txnid ? 0 : metas[1].txnid == *txnid ? 1 : -1;
    const Meta* meta = index < 0 ? nullptr : &metas[index];
    const std::uint64_t file_pages = std::uint64_t(st.st_size) / metas[0].page_size;
    if (!meta) {
      result.problem = "transaction " + std::to_string(*txnid) + " was replaced meanwhile";
    } else if (meta->last_page >= file_pages) {
      damaged(index, "last page " + std::to_string(meta->last_page) + " but the file has " +
                         std::to_string(file_pages) + " pages");
    } else {
      result.txnid = meta->txnid;
      Walker walker(fd, file_pages, *meta, options.overflow_headers, result);
      // The main database first, its named databases next, the free list last: a page both in
      // use and free is reported at the free list.
      bool ok = walker.walk(meta->main, Tree::main, index);
      for (std::size_t i = 0; ok && i < walker.named().size(); ++i) {
        const Named named = walker.named()[i];
        ok = walker.walk(named.db, Tree::named, named.page);
      }
      ok = ok && walker.walk(meta->free, Tree::free, index);
      if (ok) {
        result.verdict = PageCheck::Verdict::ok;
        result.unused_pages = meta->last_page + 1 - 2 - walker.used_pages();
      }
    }
  }
  ::close(fd);
  return result;
}

} // namespace jitcache::detail
