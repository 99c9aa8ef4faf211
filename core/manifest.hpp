#pragma once

#include "core/dependencies.hpp"
#include "core/file_stamp.hpp"

#include <jitcache/expected.hpp>
#include <jitcache/key.hpp>

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitcache::detail {

class CacheCore;

// Manifests (ccache's "direct mode"): building a key reads every header a source pulls in, which
// for toolkit-heavy sources (CUB: hundreds of headers) costs far more than loading the binary.
// The user tier remembers, per request, the key and the stamps of the files it was built from;
// a later process that finds every stamp unchanged takes the key without reading a file.

/// A remembered value and the stamps that vouch for it.
struct Record {
  std::string guards; ///< encode_stamps()
  std::string payload;
};

/// The stored form of a record (magic, XXH3 checksum, stamps, payload) and back; nullopt on
/// bytes that are not a whole, intact record.
std::string encode_record(const Record& record);
std::optional<Record> decode_record(std::string_view bytes);

/// A key's stored form (digest, backend, stored fields) and back; nullopt on malformed bytes.
/// The decoded key has no `fields`, only `stored_fields`: that is all a lookup compares, and
/// decoding hundreds of header fields would cost more than the rest of a hit.
std::string encode_key(const Key& key);
std::optional<Key> decode_key(std::string_view bytes);

/// The name of a record: SHA-256 over `kind` and each part (length-delimited) and jitcache's
/// version. The parts must be every input of what is remembered that is not vouched for by
/// file stamps (for a key: options, source, in-memory headers, identities, current directory).
Digest record_name(std::string_view kind, std::initializer_list<std::string_view> parts);
/// `fields` as "name=value" lines: the text form of identities and compile environments among
/// a record name's parts.
std::string fields_text(const std::vector<std::pair<std::string, std::string>>& fields);

/// A key, and the stamps that vouch for the files it was built from (nullopt: they changed too
/// recently to vouch for anything; the key is right but must not be remembered).
struct GuardedKey {
  Key key;                          ///< when recalled, `fields` is empty (stored_fields is kept)
  std::optional<std::string> guards; ///< encode_stamps()
  bool recalled = false;            ///< taken from a remembered manifest: no file was read
};

/// The key a request named `name` (record_name) had, when `core` remembers it for `backend`
/// and none of the files it was built from changed since: no file is read. Otherwise `build`
/// builds it, and it is remembered for the next process (when the stamps can vouch and the user
/// tier is writable). Errors: those of `build`.
Expected<GuardedKey> manifest_key(CacheCore& core, const std::string& backend, const Digest& name,
                                  const std::function<Expected<std::pair<Key, Dependencies>>()>& build);

} // namespace jitcache::detail
