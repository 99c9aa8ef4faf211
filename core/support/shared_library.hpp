#pragma once

#include <jitcache/expected.hpp>

#include <cstdint>
#include <string>

namespace jitcache::detail {

/// Fills a table of function pointers from a dlopen'ed library: each load() resolves one symbol;
/// missing() names the first that was absent, so a table with a null pointer is never handed
/// out (the backends open their runtimes lazily, so a machine without them still runs).
class SymbolLoader {
public:
  explicit SymbolLoader(void* library) : m_library(library) {}

  template <typename Fn> void load(Fn& fn, const char* name) {
    fn = reinterpret_cast<Fn>(lookup(name));
    if (!fn && m_missing.empty())
      m_missing = name;
  }
  /// The first symbol that could not be found, or empty.
  const std::string& missing() const { return m_missing; }

private:
  void* lookup(const char* name) const;
  void* m_library;
  std::string m_missing;
};

/// A library table opened once per process (a static), as a pointer: a library that was missing
/// at first use stays missing, with the same error, for the rest of the process.
template <typename Api> Expected<const Api*> loaded_once(const Expected<Api>& loaded) {
  if (!loaded)
    return loaded.error();
  return &loaded.value();
}

/// The file a loaded library came from, symlinks resolved: its name tells builds apart
/// (libnvrtc.so.13 -> libnvrtc.so.13.0.88) and so does its size.
struct LibraryFile {
  std::string path;        ///< absolute, resolved; empty when unknown
  std::string name;        ///< the last component of path
  std::uint64_t bytes = 0; ///< 0 when unknown
  /// "libamdhip64.so.5.2.21153 (26131240 bytes)": the identity used in keys (no directory, so
  /// machines with the same packages share keys).
  std::string describe() const { return name + " (" + std::to_string(bytes) + " bytes)"; }
};

/// The library that holds `symbol` (any address inside it). Never fails: unknowns stay empty.
LibraryFile library_file(const void* symbol);

/// The path of the first library loaded into this process whose file name contains `part`
/// ("libclang-cpp.so"); empty when none is.
std::string loaded_library(const char* part);

} // namespace jitcache::detail
