#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

struct stat;

namespace jitcache::detail {

/// What stat(2) says of a file or directory a key was built from: enough to tell, without
/// reading it, that it is not the one that was read (ccache's "direct mode" uses the same test).
/// A directory's stamp changes when an entry is added to it, removed or renamed.
struct FileStamp {
  std::string path;
  bool exists = false; ///< false: stat failed (the other fields are 0)
  std::uint64_t ino = 0, size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  friend bool operator==(const FileStamp& a, const FileStamp& b) {
    return std::tie(a.path, a.exists, a.ino, a.size, a.mtime_ns, a.ctime_ns) ==
           std::tie(b.path, b.exists, b.ino, b.size, b.mtime_ns, b.ctime_ns);
  }
};

/// The stamp of `path` now (stat follows symlinks, so a retargeted link changes it).
FileStamp stamp_of(const std::string& path);
/// The stamp of `path` from a stat already made (fstat of the descriptor that was read).
FileStamp stamp_from(const std::string& path, const struct stat& st);

/// The content of the regular file `path`, with `stamp` set to the stamp of the bytes read (taken
/// before reading: a write meanwhile changes the file's stamp). nullopt: absent, unreadable, not
/// a regular file, or larger than `max_bytes` (then not read). One open, one fstat, one read.
std::optional<std::string>
read_stamped(const std::string& path, FileStamp& stamp,
             std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

/// What too_recent() takes "now" from: nanoseconds since the epoch on the clock that file
/// timestamps are taken from (CLOCK_REALTIME). The default is real_time_ns (the process's clock,
/// detail::clock()); tests pass a clock they set, for one cache (CacheCore::set_stamp_clock) or
/// the whole process (ScopedClock), instead of sleeping until stamps settle.
using StampClock = std::int64_t (*)();
/// detail::clock().wall_ns(): CLOCK_REALTIME now, in nanoseconds since the epoch, unless a test
/// installed another clock.
std::int64_t real_time_ns();

/// Whether a stamp was modified or changed within `seconds` of `clock()`. Timestamps are only as
/// fine as the kernel's clock tick, so a file written twice within one tick, to the same size,
/// keeps its stamp: a stamp that recent cannot vouch for the content.
bool too_recent(const FileStamp& stamp, StampClock clock, int seconds = 2);

/// The stored form of `stamps`: a table of their directories, then each stamp as its
/// directory's index, its name and its stat fields, grouped by directory.
std::string encode_stamps(const std::vector<FileStamp>& stamps);
/// Back from encode_stamps() (grouped by directory); nullopt on malformed bytes.
std::optional<std::vector<FileStamp>> decode_stamps(std::string_view encoded);

/// How far the files of a set of stamps spread: what watching them costs (FileWatch).
struct StampsExtent {
  std::size_t files = 0;   ///< stamps
  std::size_t folders = 0; ///< distinct folders their paths go through, / included
};
/// The extent of `encoded` (encode_stamps), read from its table of directories without a string
/// per stamp: each directory and every ancestor of it, counted once (a relative path's folders
/// down from the current directory, which counts as one). nullopt on malformed bytes.
std::optional<StampsExtent> extent_of_stamps(std::string_view encoded);

/// Whether every stamp in `encoded` (encode_stamps) still describes its file; false also on
/// malformed bytes. Checked in the stored form, without making a string per stamp: each
/// directory is opened once (O_PATH, one at a time) and each file stat'ed relative to it. Stops
/// at the first change.
bool unchanged(std::string_view encoded);

} // namespace jitcache::detail
