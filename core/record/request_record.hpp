#pragma once

#include <jitcache/key.hpp>

#include <jitcache/expected.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::detail {

/// The version of the request record's line format. You MUST bump it when a field changes
/// meaning or a required field is added; decode_request() refuses lines of another version.
inline constexpr int k_request_record_version = 1;

/// A header as the key saw it: what makes a record replayable on another machine.
struct RecordedHeader {
  std::string name;    ///< as the source spells it (the key's header field name)
  std::string content; ///< its bytes, as hashed
  std::string path;    ///< where it was found, for people (not hashed)
};

/// One build request, self-contained, as one JSON line. Two writers share the format:
/// - `JITCACHE_RECORD` (core/record/request_log): every distinct request of a process, for
/// `jitcache
///   warm` to make again, here or on another machine, for other targets;
/// - the detached `jitcache store` hand-over (core/engine/store_handover), which needs only the
/// first
///   seven fields (the rest stay empty).
/// A replay is exact only when it reproduces `key` (for the recorded target); one that does not
/// is dropped, never stored.
struct RequestRecord {
  std::string backend; ///< "opencl", "cuda", "hip"
  /// OpenCL: the device's name, for people (the device is found by `identity` or the key);
  /// CUDA and HIP: the target compiled for ("sm_90", "gfx90a:sramecc+:xnack-").
  std::string device;
  /// The options exactly as given: OpenCL's option string as one element; NVRTC's and
  /// hipRTC's one option per element.
  std::vector<std::string> options;
  std::string directory; ///< the current directory of the request
  std::string source;    ///< the source text
  std::string key;       ///< the key's digest in hex
  /// The key schema (k_key_schema_version) `key` was made with. An optional field: records
  /// written before it (schema 1) leave it out, and read as 1.
  int key_schema = k_key_schema_version;
  std::map<std::string, std::string> variables; ///< Config::variables of the requesting cache
  std::string name; ///< the program name (CUDA, HIP: it is part of the key); empty for OpenCL
  std::vector<std::string> name_expressions;    ///< CUDA, HIP
  std::vector<RecordedHeader> headers;          ///< every header the key covers, by content
  std::map<std::string, std::string> identity;  ///< the key's device fields
  std::map<std::string, std::string> toolchain; ///< the key's toolchain fields
  /// A hand-over's: how long the requesting process's compile took (what the stored entry's
  /// hits save, with the store's own compile of the kernels); 0: not said. An optional field
  /// (older readers ignore it, older writers leave it out): no format version change.
  std::uint64_t compile_ns = 0;
};

/// `record` as one line of JSON (with its format version), without the newline. Bytes of the
/// source, options or headers that are not UTF-8 are replaced (the replay then has another key
/// and is dropped). Never fails.
std::string encode_request(const RequestRecord& record);

/// The record of one line written by encode_request(). Errors: corrupt (not JSON, another
/// format version, or a field missing or of the wrong type), naming what is wrong.
Expected<RequestRecord> decode_request(std::string_view line);

} // namespace jitcache::detail
