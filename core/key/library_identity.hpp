#pragma once

#include <jitcache/expected.hpp>

#include <functional>
#include <optional>
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
  std::string_view kind;                 ///< names the record: "nvrtc identity"
  std::vector<std::string_view> sonames; ///< what is dlopen'ed
  std::vector<std::string> dirs;         ///< directories searched besides LD_LIBRARY_PATH's and
                                         ///< those of the files found (a build-time default)
};

/// What reading an identity of type `T` from the libraries found.
template <typename T> struct ProbedLibraries {
  T identity;
  std::vector<std::string> files; ///< the library files it was read from (absolute paths)
};

/// Offers `recall` the identity remembered for `search` (see remembered_identity()) without
/// opening anything; true when one was remembered and `recall` took it.
bool recall_identity(CacheCore& core, const std::string& backend, const LibrarySearch& search,
                     const std::function<bool(std::string_view)>& recall);

/// The identity remembered_identity() would return without opening the libraries; nullopt when
/// none is remembered (or `decode` gives nullopt), and then nothing is opened either.
template <typename T>
std::optional<T> recalled_identity(CacheCore& core, const std::string& backend,
                                   const LibrarySearch& search,
                                   std::optional<T> (*decode)(std::string_view)) {
  std::optional<T> known;
  recall_identity(core, backend, search,
                  [&](std::string_view stored) { return (known = decode(stored)).has_value(); });
  return known;
}

/// remembered_identity() on the identity's stored form: `recall` is offered a remembered one
/// and says whether it took it; `probe` returns it with the library files.
Expected<void> recall_or_probe(CacheCore& core, const std::string& backend,
                               const LibrarySearch& search,
                               const std::function<bool(std::string_view)>& recall,
                               const std::function<Expected<ProbedLibraries<std::string>>()>& probe,
                               bool* remembered);

/// The identity of the libraries `search` names, remembered in `backend`'s user tier. When a
/// record is remembered for this library search (LD_LIBRARY_PATH as `core`'s config has it, the
/// sonames, the directories) and the library files, their directories, /etc/ld.so.cache and
/// the searched directories are unchanged, the identity it holds (read back by `decode`) is
/// returned, `*remembered` is set and nothing is opened. Otherwise (also when `decode` gives
/// nullopt) `probe` opens the libraries, and what it returns is remembered for the next process,
/// stored as `encode` writes it (when the stamps can vouch and the user tier is writable).
/// Errors: those of `probe`.
template <typename T>
Expected<T>
remembered_identity(CacheCore& core, const std::string& backend, const LibrarySearch& search,
                    std::string (*encode)(const T&), std::optional<T> (*decode)(std::string_view),
                    const std::function<Expected<ProbedLibraries<T>>()>& probe, bool* remembered) {
  std::optional<T> known;
  auto found = recall_or_probe(
      core, backend, search,
      [&](std::string_view stored) { return (known = decode(stored)).has_value(); },
      [&]() -> Expected<ProbedLibraries<std::string>> {
        auto probed = probe();
        if (!probed)
          return std::move(probed).error();
        known = std::move(probed->identity);
        return ProbedLibraries<std::string>{encode(*known), std::move(probed->files)};
      },
      remembered);
  if (!found)
    return std::move(found).error();
  return std::move(*known);
}

} // namespace jitcache::detail
