#pragma once
// The stand-in requests, keys and entries the core's tests store, and what a user tier leaves
// when it sets a damaged data file aside.

#include <jitcache/digest.hpp>
#include <jitcache/entry.hpp>
#include <jitcache/key.hpp>

#include <cstddef>
#include <filesystem>
#include <string>

namespace jitcache::test {

/// The key of `source` for `backend` on a device named `device`.
inline Key key_for(const std::string& source, const std::string& backend = "opencl",
                   const std::string& device = "test") {
  return KeyBuilder(backend).device("device_name", device).source(source).finish();
}

/// The digest of "entry <i>": a user tier's key for the i-th sample entry.
inline Digest numbered_key(int i) {
  return Digest::of("entry " + std::to_string(i));
}

/// An OpenCL entry of `bytes` bytes, each the i-th letter of the alphabet (wrapping).
inline Entry numbered_entry(int i, std::size_t bytes) {
  return Entry{"opencl", std::string(bytes, static_cast<char>('a' + i % 26)), {}, 0};
}

/// Whether `dir` holds a data file the user tier set aside as damaged ("data.mdb.corrupt-...").
inline bool has_aside_file(const std::filesystem::path& dir) {
  for (const auto& item : std::filesystem::directory_iterator(dir))
    if (item.path().filename().string().rfind("data.mdb.corrupt-", 0) == 0)
      return true;
  return false;
}

} // namespace jitcache::test
