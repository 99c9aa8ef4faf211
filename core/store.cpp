#include <jitcache/store.hpp>

namespace jitcache {

Expected<bool> Store::visit(const Digest& key, const std::function<void(const EntryView&)>& use) {
  auto got = get(key);
  if (!got)
    return std::move(got).error();
  if (!*got)
    return false;
  use(EntryView(**got));
  return true;
}

} // namespace jitcache
