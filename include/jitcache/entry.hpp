#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace jitcache {

/// What a cache stores for one key: the backend's binary plus what it needs to use it again.
struct Entry {
  Entry() = default;
  Entry(std::string backend_name, std::string binary, std::string meta = {},
        std::uint64_t compile_time_ns = 0)
      : backend(std::move(backend_name)), payload(std::move(binary)), metadata(std::move(meta)),
        compile_ns(compile_time_ns) {}

  std::string backend;         ///< "opencl", "cuda", "hip"
  std::string payload;         ///< the binary (program binary, cubin, code object), raw bytes
  std::string metadata;        ///< backend-defined extra data (e.g. lowered names), may be empty
  std::uint64_t compile_ns = 0; ///< how long the compile took; counted as time saved on hits
  /// The key's fields as stored (Key::stored_fields): lets a lookup confirm that an entry answers
  /// the same request, and `jitcache explain` say which field differs. Filled by the Cache.
  std::string key_fields;
};

} // namespace jitcache
