#pragma once

#include "core/key/library_identity.hpp"

#include <jitcache/cache.hpp>
#include <jitcache/expected.hpp>

#include <functional>
#include <string>
#include <vector>

namespace jitcache::rtc {

// Applications ask the runtime's version (CuPy at its start) and its targets before they compile
// anything. Passed through, each such call opens the real runtime (NVRTC: a 110 MB library, 10
// ms and half of a warm process's instructions), which a process that only hits never needs
// otherwise. Their answers depend on the library alone, so they are remembered as its identity
// is (core/key/library_identity.hpp): a record in the user tier, vouched for by the stamps of
// the library files and of what decides which files the loader finds.

/// The answers of the runtime's calls that depend on its library alone, as it gave them.
struct LibraryAnswers {
  int major = 0; ///< the version call's major number
  int minor = 0; ///< and its minor number
  /// The supported-targets call's, in its order (NVRTC's nvrtcGetSupportedArchs); empty where
  /// the API has none.
  std::vector<int> targets;
};

/// Where a front-end's answers are remembered, and how they are read from the real runtime.
struct AnswersSource {
  /// The real runtime's search (FrontEnd::search) with a record kind of the answers' own.
  detail::LibrarySearch search;
  /// Opens the real runtime and asks it; errors: the runtime is missing or a call failed (the
  /// application then gets the real runtime's own answer).
  std::function<Expected<detail::ProbedLibraries<LibraryAnswers>>()> ask;
};

/// The answers `source` remembers in `backend`'s user tier of `cache` when its record is proven
/// (nothing opened), else those the real runtime gives, remembered for the next process.
/// Errors: those of `source.ask`.
Expected<LibraryAnswers> library_answers(Cache& cache, const std::string& backend,
                                         const AnswersSource& source);

} // namespace jitcache::rtc
