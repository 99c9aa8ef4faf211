#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace jitcache::cuda {

/// What a stored CUDA entry carries besides its binary (Entry::metadata).
struct Metadata {
  std::string format; ///< "cubin" or "ptx" (the driver JIT-compiles PTX)
  std::string target; ///< what NVRTC compiled for: "sm_80", "compute_120"
  std::map<std::string, std::string> lowered_names; ///< name expression -> lowered name
};

/// Encodes `metadata` as text that names its own fields, so that `jitcache list` users and later
/// versions can read it:
///
///   jitcache-cuda-metadata 1
///   format cubin
///   target sm_80
///   name 15:scale<float, 4> 23:_Z5scaleIfLi4EEvPT_S0_i
///
/// Each name line holds two length-prefixed strings, so any byte may appear in an expression.
std::string encode_metadata(const Metadata& metadata);

/// Parses what encode_metadata wrote; std::nullopt for anything else (a stored entry whose
/// metadata cannot be read is treated like a binary the driver refused).
std::optional<Metadata> decode_metadata(std::string_view text);

} // namespace jitcache::cuda
