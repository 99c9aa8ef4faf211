#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/user_store.hpp"

namespace jitcache::cli {

int run_clear(const Config& config, const Output& out) {
  std::error_code ec;
  if (!std::filesystem::exists(user_store_dir(config) / "data.mdb", ec)) {
    out.emit({{"cleared", 0}, {"bytes", 0}}, "nothing to clear");
    return 0;
  }
  auto store = open_user_tier(config, true);
  if (!store)
    return fail(store.error());
  auto usage = (*store)->usage();
  if (!usage)
    return fail(usage.error());
  if (auto cleared = (*store)->clear(); !cleared)
    return fail(cleared.error());
  out.emit({{"cleared", usage->entries}, {"bytes", usage->value_bytes}},
           "cleared " + std::to_string(usage->entries) + " entries (" +
               format_size(usage->value_bytes) + ")");
  return 0;
}

} // namespace jitcache::cli
