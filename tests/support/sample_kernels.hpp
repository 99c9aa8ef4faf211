#pragma once
// Where the sample kernels are (the source tree's kernels/ folder, JITCACHE_KERNELS) and the
// options that find their headers.

#include <string>

namespace jitcache::test {

/// The kernels/ folder of the source tree.
inline const std::string k_kernels = JITCACHE_KERNELS;
/// "-I <kernels/>": the build options under which the sample kernels find their headers.
inline const std::string k_options = "-I " + k_kernels;

} // namespace jitcache::test
