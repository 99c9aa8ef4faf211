#pragma once

#include <jitcache/digest.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct stat;

namespace jitcache::detail {

// What package managers write of the files they install (pip's `RECORD` in each wheel's
// `.dist-info` folder: path, SHA-256, size; dpkg's `/var/lib/dpkg/info/*.md5sums`: MD5, path):
// what lets a machine that has never read a toolkit's headers trust that one holds the bytes
// another machine read, by stat(2) alone. See docs/ARCHITECTURE.md, "Portable manifests".

/// A package manager's word for one file: the record it wrote, whose line for the file gives
/// the digest of the bytes read, and that record's content (so that another machine knows the
/// record says the same without parsing it).
struct InstalledProof {
  std::string file;        ///< the file the record names: the path read, or where its links lead
  std::string record;      ///< the record file (absolute path)
  std::string entry;       ///< the file's path as the record writes it
  std::string record_hash; ///< XXH3-128 of the record's bytes (16 bytes)
};

/// Package managers' records, each read and parsed once. Not thread-safe; one per export or per
/// proof.
class InstalledFiles {
public:
  /// The record that lists `path` (absolute, lexically normal) with the digest of `content`
  /// (the bytes just read from it): the first found walking up from its folder, in each folder
  /// `*.dist-info/RECORD` and `dist-info/*.dist-info/RECORD` (a toolkit assembled from wheels),
  /// at `/` dpkg's md5sums. A record's line names the file when it is the path below the
  /// record's root (see root_of) or ends with "/" and that path (a wheel's files moved under
  /// another prefix). A path through symbolic links (`/usr/local/cuda/...` for dpkg's
  /// `usr/local/cuda-13.0/...`) is looked for where they lead when it is not found as it is.
  /// nullopt when no record lists it with that digest.
  /// `sha256`: the SHA-256 of `content` when the caller has it (pip's digest is made from it,
  /// not hashed again).
  std::optional<InstalledProof> find(const std::string& path, std::string_view content,
                                     const Digest* sha256 = nullptr);

  /// Whether `proof` still vouches for the file at `path` now, as stat(2) gave `st`: the record
  /// is a regular file with the bytes it had when find() read it (so it still lists the entry
  /// with the digest of the bytes read then); the entry names `proof.file` (as find() matches
  /// them), which is `path` or the same file (device and inode, one more stat); the file is a
  /// regular file whose status last changed no later than the record's (a file written after
  /// its package manager recorded it has a later ctime, which no user can set back). Each
  /// record is read and hashed once, not parsed.
  bool vouches(const InstalledProof& proof, const std::string& path, const struct stat& st);

  /// Whether `path` (absolute, lexically normal) is the directory entry `file` (what find()
  /// matched it as): the same name in the folder that `path`'s folder leads to through its
  /// symbolic links. Then stat(2) of one is stat(2) of the other. Each folder is resolved once
  /// (one lstat(2) per folder, its parent's resolution reused).
  bool leads_to(const std::string& path, const std::string& file);

  /// The folder a record's entries are relative to: `/` for dpkg's, the folder holding the
  /// `.dist-info` folder for pip's (or the one above a folder named `dist-info` holding it).
  static std::string root_of(const std::string& record);

private:
  struct Line {
    std::string digest;
    std::int64_t size = -1; ///< -1: not recorded (dpkg)
  };
  struct Record {
    bool ok = false;
    std::int64_t ctime_ns = 0;
    std::string hash;                            ///< XXH3-128 of its bytes
    std::unordered_map<std::string, Line> lines; ///< by entry; only when parsed
  };
  /// find() for `path` as it is spelled.
  std::optional<InstalledProof> find_as(const std::string& path, std::string_view content,
                                        const Digest* sha256);
  /// The record `file`, read once; its lines parsed when `parse`.
  const Record& record(const std::string& file, bool parse);
  const std::vector<std::string>& records_in(const std::string& folder);

  /// `folder` with every symbolic link in it resolved; empty when it is not a folder.
  const std::string& resolved(const std::string& folder);

  std::map<std::string, Record> m_records;
  std::unordered_map<std::string, std::string> m_resolved;      ///< resolved(), by folder
  std::map<std::string, std::vector<std::string>> m_records_in; ///< by folder
};

/// Whether `entry` (a record's line's path) names the file `path` for a record whose root is
/// `root`: the path below the root, or an entry ending with "/" and that path.
bool entry_names(std::string_view entry, std::string_view root, std::string_view path);

} // namespace jitcache::detail
