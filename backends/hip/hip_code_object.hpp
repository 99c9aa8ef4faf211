#pragma once

#include <jitcache/expected.hpp>

#include <string>
#include <string_view>

namespace jitcache::hip {

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
