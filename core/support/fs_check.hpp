#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>

namespace jitcache::detail {

/// What statfs says about the filesystem holding a path.
struct Filesystem {
  long type = 0;    ///< statfs f_type; 0 when it could not be read
  std::string name; ///< e.g. "nfs", "lustre"; empty for types not in the network table
  bool network = false;
};

/// The filesystem of `path`, or of its nearest existing ancestor when `path` does not exist yet.
/// Never fails: an unreadable path gives a Filesystem with type 0 (treated as local).
Filesystem probe_filesystem(const std::filesystem::path& path);

/// A probe as LmdbStore::Options takes it (tests pass one that pretends a filesystem type).
using FilesystemProbe = Filesystem (*)(const std::filesystem::path& path);

/// The name of a network or cluster filesystem type (NFS, SMB/CIFS, Lustre, GPFS, CephFS, AFS,
/// BeeGFS, 9p, ...), where LMDB's locks and memory map are not safe; std::nullopt for any other
/// type. Pure function of statfs's f_type.
std::optional<std::string> network_filesystem_name(long type);

/// Why the user must not write to the existing directory `dir`: it is owned by another user, or
/// writable by its group or by others ("owned by uid 65534, not by this user (uid 0)",
/// "writable by group or others (mode 0777)"). std::nullopt when it is private to this user or
/// cannot be examined (the open that follows reports that).
std::optional<std::string> foreign_directory_problem(const std::filesystem::path& dir);
/// The same, for a directory already examined (`st` from fstat of the open directory).
std::optional<std::string> foreign_directory_problem(const struct stat& st);

} // namespace jitcache::detail
