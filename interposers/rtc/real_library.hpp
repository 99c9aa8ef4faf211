#pragma once

#include <jitcache/expected.hpp>

#include <atomic>
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

/// The real runtime of a front-end (its `Real`, the functions it passes calls to), opened once
/// per process: `Api::real()` returns get(Api::open). Never closed: calls may come during exit.
template <typename Real> class OpenOnce {
public:
  /// The runtime `open` opens (null when missing), opened by the first call of any thread.
  static const Real* get(const Real* (*open)()) {
    static const Real* const opened = [&] {
      const Real* real = open();
      s_opened.store(true, std::memory_order_release);
      return real;
    }();
    return opened;
  }

  /// Whether get() has opened the runtime (or found it missing), told without opening it.
  static bool opened() { return s_opened.load(std::memory_order_acquire); }

private:
  static inline std::atomic<bool> s_opened{false};
};

} // namespace jitcache::rtc
