#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace jitcache {

/// What a cache stores for one key: the backend's binary plus what it needs to use it again.
struct Entry {
  Entry() = default;
  Entry(std::string backend_name, std::string binary, std::string meta = {},
        std::uint64_t compile_time_ns = 0)
      : backend(std::move(backend_name)), payload(std::move(binary)), metadata(std::move(meta)),
        compile_ns(compile_time_ns) {}

  std::string backend;          ///< "opencl", "cuda", "hip"
  std::string payload;          ///< the binary (program binary, cubin, code object), raw bytes
  std::string metadata;         ///< backend-defined extra data (e.g. lowered names), may be empty
  std::uint64_t compile_ns = 0; ///< how long the compile took; counted as time saved on hits
  /// The key's fields as stored (Key::stored_fields): lets a lookup confirm that an entry answers
  /// the same request, and `jitcache explain` say which field differs. Filled by the Cache.
  std::string key_fields;
};

/// An entry read in place: views into bytes that its provider owns (a tier's memory map, a
/// package's bytes, an Entry). Valid only during the call it is handed to; copy what must
/// outlive it.
struct EntryView {
  EntryView() = default;
  /// Views into `entry`'s parts (valid while `entry` is unchanged).
  explicit EntryView(const Entry& entry)
      : backend(entry.backend), metadata(entry.metadata), key_fields(entry.key_fields),
        payload(entry.payload), compile_ns(entry.compile_ns) {}
  EntryView(std::string_view backend_name, std::string_view meta, std::string_view fields,
            std::string_view binary, std::uint64_t compile_time_ns)
      : backend(backend_name), metadata(meta), key_fields(fields), payload(binary),
        compile_ns(compile_time_ns) {}

  std::string_view backend, metadata, key_fields, payload;
  std::uint64_t compile_ns = 0;
};

} // namespace jitcache
