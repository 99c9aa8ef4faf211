#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

namespace jitcache::cli {

int run_verify(const Config& config, const Output& out) {
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
