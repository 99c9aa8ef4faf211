#include <jitcache/store.hpp>

namespace jitcache {

Expected<Store::Visit> Store::visit(const Digest& key,
                                    const std::function<void(const EntryView&)>& use) {
  auto got = get(key);
  if (!got)
    return std::move(got).error();
  if (!*got)
    return Visit::miss();
  use(EntryView(**got));
  return Visit::hit();
}

} // namespace jitcache
