#pragma once

#include "core/tiers/packages/package_target.hpp"

#include <jitcache/digest.hpp>
#include <jitcache/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitcache::detail {

/// A package: one immutable file (or span of bytes linked into a program) holding the entries
/// of one backend for one target, and named records beside them, read in place. Integers are
/// little-endian and read byte by byte (byte_io), so a span at any alignment will do.
///
///   offset 0    "JCPK"          magic
///           4   u32le           package format version (k_package_version)
///           8   u64le           XXH3-64 of every byte from offset 16 to the data offset
///                               (the rest of this header, the provenance and both indexes)
///          16   u32le           entry format version of every entry (k_format_version)
///          20   u32le           provenance length P
///          24   u64le           entry count N
///          32   u64le           total size of the package in bytes
///          40   u64le           data offset D = 56 + P + 48 * (N + R)
///          48   u64le           record count R
///          56   provenance      counted text fields (byte_io append_counted), in this order:
///                               jitcache version that wrote it, creation time (Unix seconds),
///                               backend, target label, target identity (PackageTarget),
///                               the toolchains (one counted field of counted fields)
///      56 + P   entry index     N records of 48 bytes, sorted by key digest, each key once:
///                               32-byte key digest, u64le offset, u64le length of its entry
/// 56 + P + 48 N record index    R records of 48 bytes, sorted by record name, each name once:
///                               32-byte record name, u64le offset, u64le length of its frame
///           D   entries         each in the entry_codec form (magic, format version, XXH3,
///                               key, key fields, ...), so using one is view_entry()
///                 then records  each framed: u64le XXH3-64 of the rest of the frame, its
///                               32-byte name, then its bytes (opaque to the package)
///
/// Version 2 (written before packages had records; still read, so that installed packages keep
/// working after an upgrade) is the same without the record count and the record index: its
/// header is 48 bytes, the provenance at 48, the entry index at 48 + P, D = 48 + P + 48 * N.
///
/// A record is a named byte string that a consumer stores beside the entries (a request's
/// manifest under its record name, core/key/manifest.hpp); record names are a domain of their
/// own, never compared with key digests. The frame makes a record as safe as an entry: its
/// checksum finds damage to its bytes, and its name, checked against the one asked for, finds a
/// record index that changed under its map and now points at another record.
///
/// The reader trusts nothing: open() checks the magic, both versions, that the header's claims
/// fit the span and the bounds below (before reading anything past the header), the checksum,
/// every length against the span, that each index is sorted with each key or name once, that
/// each entry and record lies within [D, total size) and is at least an entry header (a record
/// frame) long; an entry is then verified by its own checksum (view_entry) when it is used, a
/// record by its frame when it is read.
///
/// A mapped file can change under its map (copied over in place by another process: pages past
/// its new end raise SIGBUS, the others show the new bytes). So every read of the span by
/// open(), read(), read_at(), read_record() and read_record_at() happens inside fault::guarded(),
/// which turns a fault into a corrupt error, and they copy the entry or record out of the span
/// first: the bytes then verified are the bytes used, whatever the file does next. find() and
/// at() read in place, unguarded: only for bytes that cannot change (linked into the program, or
/// a string).
/// You MUST bump k_package_version when this layout changes (and keep reading the versions
/// installed packages have).
inline constexpr std::uint32_t k_package_version = 3;
/// The oldest package format version read (the layout above says how it differs).
inline constexpr std::uint32_t k_package_oldest_version = 2;
/// The header of a version 3 package, and of a version 2 one (no record count).
inline constexpr std::size_t k_package_header_size = 56;
inline constexpr std::size_t k_package_v2_header_size = 48;
inline constexpr std::size_t k_package_index_record = 48;
/// A record's frame before its bytes: the XXH3-64 of the rest, and its name.
inline constexpr std::size_t k_package_record_frame = 40;
/// The most entries a package holds (an index of 48 MiB), the most records (another 48 MiB),
/// and the longest provenance (1 MiB): a header cannot make a reader read or hash more than
/// these, whatever size the file claims.
inline constexpr std::uint64_t k_package_max_entries = std::uint64_t(1) << 20;
inline constexpr std::uint64_t k_package_max_records = std::uint64_t(1) << 20;
inline constexpr std::uint32_t k_package_max_provenance = std::uint32_t(1) << 20;
/// The suffix package files carry; a folder on JITCACHE_SYSTEM_PATH contributes these.
inline constexpr const char* k_package_suffix = ".jcpkg";

/// Where a package comes from and what it serves (checksummed with the index).
struct Provenance {
  std::uint32_t entry_format_version = 0;
  std::string jitcache_version;
  std::int64_t created = 0; ///< Unix seconds
  PackageTarget target;
  /// The compiler identities its entries were made with, each once in the order first met: the
  /// toolchain sections of their key fields (toolchain_of_stored). A backend builds keys with
  /// these to find packaged entries without opening its own compiler.
  std::vector<std::string> toolchains;
  std::uint32_t package_version = 0; ///< the format version it was written in
  std::uint64_t entries = 0;
  std::uint64_t records = 0; ///< named records (none in a version 2 package)
  std::uint64_t bytes = 0;   ///< the whole package
};

/// A package opened over bytes it does not own (a mapped file, linked bytes): valid while they
/// are. Read-only and thread-safe.
class PackageReader {
public:
  /// Checks `bytes` (see the layout), reading them under the fault guard. Errors (code corrupt,
  /// the message saying what failed): too short, bad magic, another package format version (a
  /// version this jitcache does not read, naming it and those it reads) or entry format version
  /// (naming both), a size that is not the span's, more entries or records or a longer
  /// provenance than a package may have, a span too small for the entries and records its header
  /// claims, lengths or offsets out of bounds, checksum mismatch, an index out of order or with a
  /// key (a record name) twice, an entry shorter than an entry header or a record shorter than
  /// its frame, and a fault while reading (the file changed under its map). Reads nothing past
  /// the header before the header's claims are found within bounds.
  static Expected<PackageReader> open(std::string_view bytes);

  const Provenance& provenance() const { return m_provenance; }
  std::size_t size() const { return static_cast<std::size_t>(m_provenance.entries); }
  /// A copy of the bytes of the entry stored under `key` (not yet verified: view_entry() them),
  /// read under the fault guard; std::nullopt when the package has none (a binary search of the
  /// index). Errors (corrupt): reading faulted, or the entry's index record no longer lies within
  /// the package (both: the file changed under its map since open()).
  Expected<std::optional<std::string>> read(const Digest& key) const;
  /// The i-th entry in key order (i < size()): its key and a copy of its bytes (not yet
  /// verified), read under the fault guard. Errors as read().
  Expected<std::pair<Digest, std::string>> read_at(std::size_t i) const;

  /// Like read(), in place and unguarded: only over bytes that cannot change (see the layout).
  std::optional<std::string_view> find(const Digest& key) const;
  /// Like read_at(), in place and unguarded: only over bytes that cannot change.
  std::pair<Digest, std::string_view> at(std::size_t i) const;

  /// How many named records the package holds (0 for a version 2 package).
  std::size_t record_count() const { return static_cast<std::size_t>(m_provenance.records); }
  /// A copy of the bytes of the record named `name`, verified by its frame (its checksum and its
  /// name), read under the fault guard; std::nullopt when the package has none (a binary search
  /// of the record index). Errors (corrupt): reading faulted, the record's index record no longer
  /// lies within the package (both: the file changed under its map since open()), or its frame
  /// does not verify (its bytes damaged, or the index now points at another record).
  Expected<std::optional<std::string>> read_record(const Digest& name) const;
  /// The i-th record in name order (i < record_count()): its name and a copy of its bytes,
  /// verified and read as read_record() does. Errors as read_record().
  Expected<std::pair<Digest, std::string>> read_record_at(std::size_t i) const;

private:
  /// Where an index lies in the bytes, and how many records it has.
  struct Index {
    std::size_t offset = 0;
    std::size_t count = 0;
  };
  PackageReader(std::string_view bytes, Index entries, Index records, std::size_t data,
                Provenance provenance)
      : m_bytes(bytes), m_entries(entries), m_records(records), m_data(data),
        m_provenance(std::move(provenance)) {}
  Digest name_at(const Index& index, std::size_t i) const;
  /// The position of `name` in `index`, or index.count when it is absent.
  std::size_t search(const Index& index, const Digest& name) const;
  /// Record i of `index` as (offset, length), when it lies within [data offset, end of bytes).
  std::optional<std::pair<std::size_t, std::size_t>> span_at(const Index& index,
                                                             std::size_t i) const;
  /// A copy of `span` (as span_at() read it for record `i` of the index named `what`, under the
  /// fault guard), copied under the guard. Errors (corrupt): the record points outside the
  /// package, or the read faulted.
  Expected<std::string> copy(const char* what, std::size_t i,
                             const std::optional<std::pair<std::size_t, std::size_t>>& span) const;
  /// Finds `name` in `index` and copies what it points at, under the guard; nullopt when absent.
  Expected<std::optional<std::string>> read_named(const Index& index, const char* what,
                                                  const Digest& name) const;
  /// Record i of `index`: its name and a copy of what it points at, under the guard.
  Expected<std::pair<Digest, std::string>> read_indexed(const Index& index, const char* what,
                                                        std::size_t i) const;

  std::string_view m_bytes;
  Index m_entries;        ///< the entry index
  Index m_records;        ///< the record index (empty in a version 2 package)
  std::size_t m_data = 0; ///< offset of the first entry (D)
  Provenance m_provenance;
};

/// One entry to write: its key and its bytes in the entry_codec form.
struct PackageEntry {
  Digest key;
  std::string bytes;
};

/// One named record to write: its name (a domain of its own, see the layout) and its bytes,
/// opaque to the package.
struct PackageRecord {
  Digest name;
  std::string bytes;
};

/// Writes a package serving `target` with `entries` (sorted here; keys must be distinct) and
/// `records` (sorted here; names must be distinct) to `file`: to a new temporary file in the same
/// directory, flushed to disk (fsync) and renamed over `file`, so `file` is never a half-written
/// package; the directory is synced after. The file is made readable by everyone (mode 0644 less
/// the umask): packages are installed for every user. A package may hold records and no entries.
/// Returns the provenance written. Errors: invalid_argument for a key or a record name given
/// twice, more than k_package_max_entries entries or k_package_max_records records, an entry
/// shorter than an entry header, or provenance longer than k_package_max_provenance (too many
/// toolchains); io_error naming the file when `file` is a symbolic link or not a regular file,
/// the directory cannot be opened, or a write, sync or rename fails (no temporary file is left).
Expected<Provenance> write_package(const std::filesystem::path& file, const PackageTarget& target,
                                   std::vector<PackageEntry> entries,
                                   std::vector<PackageRecord> records = {});

} // namespace jitcache::detail
