#pragma once

#include <jitcache/expected.hpp>

#include <string>
#include <vector>

namespace jitcache::rtc {

/// The real runtime library a front-end passes calls to, opened by absolute path and never by
/// its soname: the front-end itself may be what the soname finds (its folder first on
/// LD_LIBRARY_PATH), and a dlopen of the soname would then return the front-end.
struct RealLibrary {
  void* handle = nullptr;
  std::string file; ///< the file opened (symlinks resolved)
};

/// Opens the first of `sonames` found in the directories the dynamic loader searches for this
/// library (LD_LIBRARY_PATH, the system's), then in `dirs`, that is not the front-end's own file
/// and that defines `symbol` itself. Errors: runtime_missing naming what was tried.
Expected<RealLibrary> open_real_library(const std::vector<std::string>& sonames,
                                        const std::vector<std::string>& dirs, const char* symbol);

} // namespace jitcache::rtc
