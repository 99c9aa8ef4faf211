#pragma once

#include <CL/cl.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::opencl {

/// What a stored OpenCL entry carries besides its binary (Entry::metadata): the binary loads
/// without it, and an entry stored without it (by an older jitcache) has none.
struct Metadata {
  std::string source;               ///< the source's name (`jitcache build`'s file); may be empty
  std::vector<std::string> kernels; ///< the program's kernels, as the runtime names them, sorted
  /// The build log of the compile that made the binary, every byte the runtime gave (its NUL
  /// included); empty when it said nothing, or the entry's jitcache kept none. A program built
  /// from the binary on another machine has no log of its compile: the OpenCL layer answers
  /// CL_PROGRAM_BUILD_LOG with this one.
  std::string log;
};

/// Encodes `metadata` as text that names its own fields (as CUDA's does):
///
///   jitcache-opencl-metadata 1
///   source 27:/home/me/kernels/matmul.cl
///   log 0:
///   kernel 12:matmul_naive
///
/// Each value is length-prefixed, so any byte may appear in a name or the log. `log` is absent
/// from what older jitcaches wrote.
std::string encode_metadata(const Metadata& metadata);

/// Parses what encode_metadata wrote; std::nullopt for anything else (an empty or older entry's).
std::optional<Metadata> decode_metadata(std::string_view text);

/// The kernels of a built program, sorted, as the runtime reports them (CL_PROGRAM_KERNEL_NAMES):
/// right for a program built from a binary as from source, and for kernels that macros define
/// or #if leaves out, where reading the source would not be. Empty when the runtime does not
/// say.
std::vector<std::string> kernel_names(cl_program program);

} // namespace jitcache::opencl
