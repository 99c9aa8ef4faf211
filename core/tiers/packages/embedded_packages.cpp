#include "core/tiers/packages/embedded_packages.hpp"

#include <jitcache/embed.h>

#include <algorithm>
#include <mutex>

namespace jitcache::detail {
namespace {

// Function-local statics: registration runs from other translation units' static constructors,
// in an order C++ does not fix.
std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::vector<EmbeddedPackage>& registry() {
  static std::vector<EmbeddedPackage> packages;
  return packages;
}

} // namespace

std::vector<EmbeddedPackage> embedded_packages() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  return registry();
}

} // namespace jitcache::detail

extern "C" void jitcache_register_embedded_package(const char* name, const void* data,
                                                   size_t size) {
  using jitcache::detail::EmbeddedPackage;
  if (!name || !data || size == 0)
    return;
  const std::string_view bytes(static_cast<const char*>(data), size);
  try {
    std::lock_guard<std::mutex> lock(jitcache::detail::registry_mutex());
    auto& packages = jitcache::detail::registry();
    const bool known = std::any_of(packages.begin(), packages.end(), [&](const auto& package) {
      return package.bytes.data() == bytes.data() && package.bytes.size() == bytes.size();
    });
    if (!known)
      packages.push_back(EmbeddedPackage{name, bytes});
  } catch (...) {
    // Called before main(), where an exception would end the program: a package that cannot be
    // registered (no memory) is simply not there, and the cache compiles instead.
  }
}
