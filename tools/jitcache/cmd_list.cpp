#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

namespace jitcache::cli {

int run_list(const Config& config, const Output& out) {
  auto store = open_user_tier(config, false);
  if (!store)
    return fail(store.error());
  if (!*store)
    return 0;
  auto listed = (*store)->for_each([&](const Store::Item& item) {
    nlohmann::json line = {{"key", item.key.hex()},
                           {"backend", item.backend},
                           {"bytes", item.bytes},
                           {"tier", "user"},
                           {"valid", item.valid}};
    out.emit(line, item.key.hex() + "  " + (item.backend.empty() ? "?" : item.backend) + "  " +
                       format_size(item.bytes) + (item.valid ? "" : "  CORRUPT"));
  });
  return listed ? 0 : fail(listed.error());
}

} // namespace jitcache::cli
