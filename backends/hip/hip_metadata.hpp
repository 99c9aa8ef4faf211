#pragma once

#include <jitcache/expected.hpp>

#include <map>
#include <string>
#include <string_view>

namespace jitcache::hip {

/// The metadata stored with a code object: its lowered names (name expression -> symbol), as
/// length-prefixed fields ("<length>:<bytes>", expression then symbol), so any byte may appear.
std::string encode_lowered_names(const std::map<std::string, std::string>& names);

/// Parses encode_lowered_names' output. Errors: corrupt (a stored entry that is not ours).
Expected<std::map<std::string, std::string>> decode_lowered_names(std::string_view metadata);

/// The target id an AMDGPU code object was built for ("gfx90a:sramecc+:xnack-"), read from the
/// "amdhsa.target" field of its NT_AMDGPU_METADATA note (code object v3 and later). `bytes` may
/// be an ELF, or a clang offload bundle holding one amdgcn-amd-amdhsa ELF.
/// Errors: corrupt, naming what is wrong (not an ELF, not EM_AMDGPU, no metadata note, ...).
Expected<std::string> code_object_target(std::string_view bytes);

/// Checks that `bytes` are an AMDGPU code object for exactly `target` (canonical form): what a
/// stored entry must pass before the runtime gets it, and a fresh compile before it is stored.
/// Errors: corrupt, naming the mismatch.
Expected<void> check_code_object(std::string_view bytes, std::string_view target);

} // namespace jitcache::hip
