#pragma once

#include <jitcache/expected.hpp>

#include <map>
#include <string>
#include <string_view>

namespace jitcache::detail {

/// One build request, self-contained, as one JSON line: what a detached `jitcache store`
/// process needs to make the same request again (core/store_handover). The shape of the request
/// records that a later "record" feature will write (backend, device, options, source by
/// content), plus what makes a replay exact: the directory the request was made in (relative
/// `-I` paths and includes resolve from it), the configuration's variables, and the key the
/// request had, which the replay must reproduce before it stores anything (headers are not
/// carried: a replay whose files changed has another key and is dropped).
struct RequestRecord {
  std::string backend;   ///< "opencl"
  std::string device;    ///< the device's name, for people; the replay finds it by the key
  std::string options;   ///< build options exactly as given
  std::string directory; ///< the current directory of the request
  std::string source;    ///< the source text
  std::string key;       ///< the key's digest in hex
  std::map<std::string, std::string> variables; ///< Config::variables of the requesting cache
};

/// `record` as one line of JSON, without the newline. Bytes of the source or options that are
/// not UTF-8 are replaced (the replay then has another key and is dropped). Never fails.
std::string encode_request(const RequestRecord& record);

/// The record of one line written by encode_request(). Errors: corrupt (not JSON, or a field
/// missing or of the wrong type), naming what is wrong.
Expected<RequestRecord> decode_request(std::string_view line);

} // namespace jitcache::detail
