#pragma once

#include <cstdint>
#include <string>

namespace jitcache {

/// What a cache stores for one key: the backend's binary plus what it needs to use it again.
struct Entry {
  std::string backend;         ///< "opencl", "cuda", "hip"
  std::string payload;         ///< the binary (program binary, cubin, code object), raw bytes
  std::string metadata;        ///< backend-defined extra data (e.g. lowered names), may be empty
  std::uint64_t compile_ns = 0; ///< how long the compile took; counted as time saved on hits
};

} // namespace jitcache
