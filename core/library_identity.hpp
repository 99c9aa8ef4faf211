#pragma once

#include <jitcache/expected.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::detail {

class CacheCore;

// A compiler's identity (its version, its library file) is part of every key, but opening the
// compiler's libraries to read it takes milliseconds (tens on a cold page cache): more than a
// whole hit. So the user tier remembers the identity read from the libraries last opened,
// vouched for by the stamps of what decides which files dlopen finds for their sonames.

/// The libraries an identity is read from, and how dlopen finds them.
struct LibrarySearch {
  std::string_view kind;                ///< names the record: "nvrtc identity"
  std::vector<std::string_view> sonames; ///< what is dlopen'ed
  std::vector<std::string> dirs;        ///< directories searched besides LD_LIBRARY_PATH's and
                                        ///< those of the files found (a build-time default)
};

/// What reading the identity from the libraries found.
struct ProbedLibraries {
  std::string identity;           ///< in the caller's stored form
  std::vector<std::string> files; ///< the library files it was read from (absolute paths)
};

/// The identity of the libraries `search` names, remembered in `backend`'s user tier. When a
/// record is remembered for this library search (LD_LIBRARY_PATH as `core`'s config has it, the
/// sonames, the directories) and the library files, their directories, /etc/ld.so.cache and
/// the searched directories are unchanged, `recall` is handed the stored identity; when it
/// takes it (returns true), `*remembered` is set and nothing is opened. Otherwise `probe` opens
/// the libraries, and what it returns is remembered for the next process (when the stamps can
/// vouch and the user tier is writable). Errors: those of `probe`. Not thread-safe with respect
/// to the callbacks' own state.
Expected<void> remembered_identity(CacheCore& core, const std::string& backend,
                                   const LibrarySearch& search,
                                   const std::function<bool(std::string_view)>& recall,
                                   const std::function<Expected<ProbedLibraries>()>& probe,
                                   bool* remembered);

} // namespace jitcache::detail
