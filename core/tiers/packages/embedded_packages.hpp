#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace jitcache::detail {

/// A package linked into the program (see <jitcache/embed.h>): its name and its bytes, which
/// live for the rest of the process.
struct EmbeddedPackage {
  std::string name;
  std::string_view bytes;
};

/// The packages registered so far, in the order they were registered. Thread-safe.
std::vector<EmbeddedPackage> embedded_packages();

} // namespace jitcache::detail
