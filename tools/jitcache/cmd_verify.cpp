#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/tiers/user/lmdb_page_check.hpp"
#include "core/tiers/user/user_store.hpp"

namespace jitcache::cli {

using detail::check_lmdb_pages;
using detail::PageCheck;
using detail::user_store_dir;

namespace {

// The data file's pages, checked before LMDB reads any (a damaged page can crash it). Without
// a read transaction a writer may reuse pages while they are read: damage is only reported
// when a second check finds it too.
PageCheck check_pages(const Config& config) {
  const std::filesystem::path data = user_store_dir(config) / "data.mdb";
  PageCheck check = check_lmdb_pages(data);
  if (check.damaged())
    check = check_lmdb_pages(data);
  return check;
}

} // namespace

int run_verify(const Config& config, const Output& out) {
  std::error_code ec;
  if (!config.cache_dir.empty() &&
      std::filesystem::exists(user_store_dir(config) / "data.mdb", ec)) {
    const PageCheck pages = check_pages(config);
    if (pages.damaged()) {
      out.emit(
          {{"pages", "damaged"}, {"page", pages.page}, {"problem", pages.problem}, {"ok", false}},
          "damaged data file " + (user_store_dir(config) / "data.mdb").string() + ": " +
              pages.problem + " (builds no longer write to it, and move it aside)");
      return 1;
    }
    out.emit({{"pages", pages.ok() ? "ok" : "unchecked"},
              {"pages_read", pages.pages_read},
              {"problem", pages.problem}},
             pages.ok() ? std::to_string(pages.pages_read) + " pages checked"
                        : "pages not checked: " + pages.problem);
  }
  auto store = open_user_tier(config, false);
  if (!store)
    return fail(store.error());
  std::uint64_t entries = 0, corrupt = 0;
  if (*store) {
    auto scanned = (*store)->for_each([&](const Store::Item& item) {
      ++entries;
      if (!item.valid) {
        ++corrupt;
        out.emit({{"key", item.key.hex()}, {"valid", false}},
                 "corrupt: " + item.key.hex() + " (" + format_size(item.bytes) + ")");
      }
    });
    if (!scanned)
      return fail(scanned.error());
  }
  out.emit({{"entries", entries}, {"corrupt", corrupt}, {"ok", corrupt == 0}},
           std::to_string(entries) + " entries checked, " + std::to_string(corrupt) + " corrupt" +
               (corrupt ? " (they read as misses and are replaced on next build)" : ""));
  return corrupt == 0 ? 0 : 1;
}

} // namespace jitcache::cli
