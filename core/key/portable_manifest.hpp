#pragma once

#include "core/key/dependencies.hpp"
#include "core/key/installed_files.hpp"

#include <jitcache/digest.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::detail {

// Portable manifests: what a package carries so that a machine that never read a toolkit's
// headers takes a packaged request's key without reading them. A manifest (core/key/manifest)
// vouches for a key by stat data that only the machine that read the files can compare; a
// portable manifest vouches by what any machine can check: each file's path, size and
// modification time, its content's SHA-256, and, for a file a package manager installed, that
// manager's record of it (InstalledProof). See docs/ARCHITECTURE.md, "Portable manifests".

/// One file a key was built from, as the exporting machine read it.
struct PortableFile {
  std::string path;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  Digest content;                          ///< SHA-256 of the bytes read
  std::optional<InstalledProof> installed; ///< a package manager's record of them
};

/// A folder whose listing a key was built from (`#include MACRO`: every regular file in it).
struct PortableListing {
  std::string folder;
  std::vector<std::string> names; ///< its regular files (symbolic links followed), sorted
};

/// A request's key and everything that proves it on another machine.
struct PortableManifest {
  std::string key;                       ///< encode_key()
  std::vector<PortableFile> files;       ///< every file read
  std::vector<std::string> absent;       ///< every include candidate that was not there
  std::vector<PortableListing> listings; ///< every folder listed
};

/// The names of the regular files in `folder` (symbolic links followed), sorted; nullopt when
/// it cannot be listed. What add_source_fields() takes from a listed folder, besides content.
std::optional<std::vector<std::string>> regular_files_in(const std::string& folder);

/// The stored form (magic, version, XXH3 checksum, fields) and back; nullopt on bytes that are
/// not a whole, intact manifest.
std::string encode_portable(const PortableManifest& manifest);
std::optional<PortableManifest> decode_portable(std::string_view bytes);
/// Only the key (encode_key()) of a stored manifest, checked as decode_portable() checks the
/// whole: what a process needs before it starts proving the rest.
std::optional<std::string> portable_key(std::string_view bytes);

/// The name of the record that keeps the paths of the files a key remembered under `key_name`
/// was built from (remember_paths), beside it in the user tier: what export needs to make its
/// portable manifest.
Digest paths_name(const Digest& key_name);
/// The stored form of `deps`' paths (files read, absent candidates, folders listed).
std::string encode_paths(const Dependencies& deps);

/// The portable manifest of `key` (encode_key()), built from the files whose paths `paths`
/// (encode_paths()) holds: each file read now, its digest taken, its package manager's record
/// looked for, each folder listed. The caller has checked that the key's stamps still hold.
/// nullopt when `paths` is malformed or a file or folder cannot be read.
std::optional<PortableManifest> make_portable(std::string key, std::string_view paths,
                                              InstalledFiles& installed);

/// What proving a portable manifest on this machine found.
struct Proven {
  Dependencies deps;       ///< the files, stamped here (for this machine's manifest)
  std::size_t vouched = 0; ///< files a package manager's record vouched for (not read)
  std::size_t read = 0;    ///< files read and hashed
};

/// Whether `manifest`'s key is this machine's key for the same request, without reading what a
/// package manager vouches for: every absent candidate is still not a regular file; every
/// listed folder has the same regular files (by name; their content is checked as files); every
/// file
/// is a regular file of the same size, and either has the same modification time and its
/// installer's record still vouches for it (InstalledFiles::vouches), or is read and has the
/// same SHA-256. nullopt when one does not hold (the caller then builds the key from the files).
std::optional<Proven> prove_portable(const PortableManifest& manifest, InstalledFiles& installed);

} // namespace jitcache::detail
