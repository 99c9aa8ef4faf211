#pragma once

#include "core/dependencies.hpp"

#include <jitcache/config.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/hip.hpp>
#include <jitcache/key.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitcache::hip {

/// The toolchain fields of every HIP key: the hipRTC library file and size, comgr's version,
/// library file and size, jitcache's version. Read once per process with no HIP call, so that a
/// lookup never initialises the runtime. Errors: runtime_missing.
Expected<std::vector<std::pair<std::string, std::string>>> toolchain_fields();

/// Checks a program before anything is looked up or compiled: a source and a name, and no
/// option that chooses the target (--offload-arch, --gpu-architecture, --cuda-gpu-arch, with or
/// without a value: hipRTC 5.2 aborts the process on an unknown target given that way, and the
/// target is part of the key). Errors: invalid_argument.
Expected<void> check_program(const Program& program);

/// The key of `program` for `target`, which must already be canonical (canonical_target), under
/// `config` (the environment variables that change hipRTC's code). Errors: runtime_missing.
Expected<Key> key_for(const Config& config, std::string_view target, const Program& program);
/// key_for(), and the files the key was built from.
Expected<std::pair<Key, Dependencies>> key_and_dependencies(const Config& config,
                                                           std::string_view target,
                                                           const Program& program);

} // namespace jitcache::hip
