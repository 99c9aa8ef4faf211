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
/// of one backend for one target, read in place. Integers are little-endian and read byte by
/// byte (byte_io), so a span at any alignment will do.
///
///   offset 0    "JCPK"          magic
///           4   u32le           package format version (k_package_version)
///           8   u64le           XXH3-64 of every byte from offset 16 to the data offset
///                               (the rest of this header, the provenance and the index)
///          16   u32le           entry format version of every entry (k_format_version)
///          20   u32le           provenance length P
///          24   u64le           entry count N
///          32   u64le           total size of the package in bytes
///          40   u64le           data offset D = 48 + P + 48 * N
///          48   provenance      counted text fields (byte_io append_counted), in this order:
///                               jitcache version that wrote it, creation time (Unix seconds),
///                               backend, target label, target identity (PackageTarget),
///                               the toolchains (one counted field of counted fields)
///      48 + P   index           N records of 48 bytes, sorted by key digest, each key once:
///                               32-byte key digest, u64le offset, u64le length of its entry
///           D   entries         each in the entry_codec form (magic, format version, XXH3,
///                               key, key fields, ...), so using one is view_entry()
///
/// The reader trusts nothing: open() checks the magic, both versions, that the header's claims
/// fit the span and the bounds below (before reading anything past the header), the checksum,
/// every length against the span, that the index is sorted and that each entry lies within
/// [D, total size) and is at least an entry header long; an entry is then verified by its own
/// checksum (view_entry) when it is used.
///
/// A mapped file can change under its map (copied over in place by another process: pages past
/// its new end raise SIGBUS, the others show the new bytes). So every read of the span by
/// open(), read() and read_at() happens inside fault::guarded(), which turns a fault into a
/// corrupt error, and read() and read_at() copy the entry out of the span first: the bytes then
/// verified are the bytes used, whatever the file does next. find() and at() read in place,
/// unguarded: only for bytes that cannot change (linked into the program, or a string).
/// You MUST bump k_package_version when this layout changes.
inline constexpr std::uint32_t k_package_version = 2;
inline constexpr std::size_t k_package_header_size = 48;
inline constexpr std::size_t k_package_index_record = 48;
/// The most entries a package holds (an index of 48 MiB), and the longest provenance (1 MiB): a
/// header cannot make a reader read or hash more than these, whatever size the file claims.
inline constexpr std::uint64_t k_package_max_entries = std::uint64_t(1) << 20;
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
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0; ///< the whole package
};

/// A package opened over bytes it does not own (a mapped file, linked bytes): valid while they
/// are. Read-only and thread-safe.
class PackageReader {
public:
  /// Checks `bytes` (see the layout), reading them under the fault guard. Errors (code corrupt,
  /// the message saying what failed): too short, bad magic, another package or entry format
  /// version (naming both), a size that is not the span's, more entries or a longer provenance
  /// than a package may have, a span too small for the entries its header claims, lengths or
  /// offsets out of bounds, checksum mismatch, an index out of order or with a key twice, an
  /// entry shorter than an entry header, and a fault while reading (the file changed under its
  /// map). Reads nothing past the header before the header's claims are found within bounds.
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

private:
  PackageReader(std::string_view bytes, std::size_t index, std::size_t data, Provenance provenance)
      : m_bytes(bytes), m_index(index), m_data(data), m_provenance(std::move(provenance)) {}
  Digest key_at(std::size_t i) const;
  /// The position of `key` in the index, or size() when it is absent.
  std::size_t search(const Digest& key) const;
  /// Record i's entry as (offset, length), when it lies within [data offset, end of the bytes).
  std::optional<std::pair<std::size_t, std::size_t>> entry_at(std::size_t i) const;
  /// A copy of the entry of index record `i`, `entry` as entry_at(i) read it under the fault
  /// guard, copied under the guard. Errors (corrupt): the record points outside the package, or
  /// the read faulted.
  Expected<std::string> copy(std::size_t i,
                             const std::optional<std::pair<std::size_t, std::size_t>>& entry) const;

  std::string_view m_bytes;
  std::size_t m_index = 0; ///< offset of the index
  std::size_t m_data = 0;  ///< offset of the first entry (D)
  Provenance m_provenance;
};

/// One entry to write: its key and its bytes in the entry_codec form.
struct PackageEntry {
  Digest key;
  std::string bytes;
};

/// Writes a package serving `target` with `entries` (sorted here; keys must be distinct) to
/// `file`: to a new temporary file in the same directory, flushed to disk (fsync) and renamed
/// over `file`, so `file` is never a half-written package; the directory is synced after.
/// The file is made readable by everyone (mode 0644 less the umask): packages are installed
/// for every user. Returns the provenance written. Errors: invalid_argument for a key given
/// twice, more than k_package_max_entries entries, an entry shorter than an entry header, or
/// provenance longer than k_package_max_provenance (too many toolchains); io_error naming the file
/// when `file` is a symbolic link or not a regular file, the directory cannot be opened, or a
/// write, sync or rename fails (no temporary file is left).
Expected<Provenance> write_package(const std::filesystem::path& file, const PackageTarget& target,
                                   std::vector<PackageEntry> entries);

} // namespace jitcache::detail
