#include "core/tiers/packages/package_format.hpp"

#include "core/support/byte_io.hpp"
#include "core/support/clock.hpp"
#include "core/support/fault_guard.hpp"
#include "core/tiers/entry_codec.hpp"

#include <jitcache/version.hpp>

#include <xxhash.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <random>

namespace jitcache::detail {

namespace {

constexpr char k_magic[4] = {'J', 'C', 'P', 'K'};
constexpr std::size_t k_checked_offset = 16; // the checksum covers from here to the data

Error damaged(const std::string& why) {
  return Error(ErrorCode::corrupt, "package " + why);
}

// A read of the package's bytes that faulted: a mapped file truncated or rewritten in place.
Error faulted() {
  return Error(ErrorCode::corrupt,
               "reading it faulted (" + fault::last_fault() + "): the file changed under its map");
}

std::uint64_t checksum(std::string_view bytes, std::size_t end) {
  return XXH3_64bits(bytes.data() + k_checked_offset, end - k_checked_offset);
}

std::optional<Provenance> parse_provenance(std::string_view in) {
  std::optional<std::string> fields[6];
  for (auto& field : fields)
    if (!(field = take_counted(in)))
      return std::nullopt;
  if (!in.empty())
    return std::nullopt;
  Provenance p;
  p.jitcache_version = std::move(*fields[0]);
  const std::string& created = *fields[1];
  const auto [end, ec] =
      std::from_chars(created.data(), created.data() + created.size(), p.created);
  if (ec != std::errc() || end != created.data() + created.size())
    return std::nullopt;
  p.target = PackageTarget{std::move(*fields[2]), std::move(*fields[3]), std::move(*fields[4])};
  for (std::string_view list = *fields[5]; !list.empty();) {
    auto toolchain = take_counted(list);
    if (!toolchain)
      return std::nullopt;
    p.toolchains.push_back(std::move(*toolchain));
  }
  return p;
}

std::string provenance_bytes(const Provenance& p) {
  std::string out;
  append_counted(out, p.jitcache_version);
  append_counted(out, std::to_string(p.created));
  append_counted(out, p.target.backend);
  append_counted(out, p.target.label);
  append_counted(out, p.target.identity);
  std::string toolchains;
  for (const std::string& toolchain : p.toolchains)
    append_counted(toolchains, toolchain);
  append_counted(out, toolchains);
  return out;
}

// A record framed for the data area: the XXH3-64 of the rest, its name, its bytes.
std::string frame(const PackageRecord& record) {
  std::string out(8, '\0');
  out.append(reinterpret_cast<const char*>(record.name.bytes.data()), record.name.bytes.size());
  out += record.bytes;
  store_le<std::uint64_t>(out.data(), XXH3_64bits(out.data() + 8, out.size() - 8));
  return out;
}

// Checks `framed` (a copy, at least a frame long: open() and the index say so, but a file that
// changed under its map may say otherwise) is the record named `name`, and leaves its bytes.
// Errors (corrupt): it is not.
Expected<void> unframe(const Digest& name, std::string& framed) {
  if (framed.size() < k_package_record_frame ||
      std::memcmp(framed.data() + 8, name.bytes.data(), name.bytes.size()) != 0)
    return damaged("record " + name.hex() + " is not where its index says (the file changed " +
                   "under its map)");
  if (load_le<std::uint64_t>(framed.data()) != XXH3_64bits(framed.data() + 8, framed.size() - 8))
    return damaged("record " + name.hex() + " fails its checksum");
  framed.erase(0, k_package_record_frame);
  return {};
}

// A file descriptor closed on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

} // namespace

Expected<PackageReader> PackageReader::open(std::string_view bytes) {
  if (bytes.size() < k_package_v2_header_size)
    return damaged("is truncated (" + std::to_string(bytes.size()) + " bytes)");
  // The header is copied under the guard and checked in the copy: what is checked is what is
  // used, however the file changes meanwhile.
  char at[k_package_header_size] = {};
  const std::size_t head = std::min(bytes.size(), sizeof at);
  if (fault::guarded([&] {
        std::memcpy(at, bytes.data(), head);
        return 0;
      }) == fault::k_fault)
    return faulted();
  if (std::memcmp(at, k_magic, sizeof k_magic) != 0)
    return damaged("has a bad magic number (not a jitcache package)");
  const auto version = load_le<std::uint32_t>(at + 4);
  if (version < k_package_oldest_version || version > k_package_version)
    return damaged("has format version " + std::to_string(version) + "; this jitcache reads " +
                   std::to_string(k_package_oldest_version) + " to " +
                   std::to_string(k_package_version));
  // Version 2 has no record count: its header ends before it.
  const std::size_t header = version == 2 ? k_package_v2_header_size : k_package_header_size;
  if (bytes.size() < header)
    return damaged("is truncated (" + std::to_string(bytes.size()) + " bytes)");
  const auto provenance_len = load_le<std::uint32_t>(at + 20);
  const auto count = load_le<std::uint64_t>(at + 24);
  const auto total = load_le<std::uint64_t>(at + 32);
  const auto data = load_le<std::uint64_t>(at + 40);
  const std::uint64_t records = version == 2 ? 0 : load_le<std::uint64_t>(at + 48);
  if (total != bytes.size())
    return damaged("is " + std::to_string(bytes.size()) + " bytes, its header says " +
                   std::to_string(total) + " (truncated or extended)");
  // Bounds on what the header can make every reader read and hash (the indexes, the
  // provenance) before its checksum is known, whatever size the file has (a sparse one costs no
  // disk).
  if (count > k_package_max_entries)
    return damaged("header claims " + std::to_string(count) + " entries; a package holds at most " +
                   std::to_string(k_package_max_entries));
  if (records > k_package_max_records)
    return damaged("header claims " + std::to_string(records) +
                   " records; a package holds at most " + std::to_string(k_package_max_records));
  if (provenance_len > k_package_max_provenance)
    return damaged("header claims " + std::to_string(provenance_len) +
                   " bytes of provenance; a package has at most " +
                   std::to_string(k_package_max_provenance));
  const std::uint64_t room = bytes.size() - header;
  // Each entry takes an index record and at least an entry header, each record an index record
  // and at least its frame (the bounds above keep these products far from overflowing).
  if (provenance_len > room || count * (k_package_index_record + k_entry_header_size) +
                                       records * (k_package_index_record + k_package_record_frame) >
                                   room - provenance_len)
    return damaged("is too small for the " + std::to_string(count) + " entries and " +
                   std::to_string(records) + " records its header claims");
  if (data != header + provenance_len + (count + records) * k_package_index_record)
    return damaged("has inconsistent lengths in its header");
  const Index entries{header + provenance_len, static_cast<std::size_t>(count)};
  const Index named{entries.offset + entries.count * k_package_index_record,
                    static_cast<std::size_t>(records)};

  // The provenance is copied (it is parsed, and what is parsed must be what was checksummed);
  // the indexes are hashed and checked where they lie. Nothing is allocated inside the guard: a
  // fault skips the destructors of what the body made.
  std::string provenance_copy(provenance_len, '\0');
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  if (!state)
    throw std::bad_alloc();
  XXH3_64bits_reset(state.get());
  XXH3_64bits_update(state.get(), at + k_checked_offset, header - k_checked_offset);
  // The first record of each index found out of order or outside the data, if any.
  struct Found {
    std::size_t out_of_order, outside;
  } found[2] = {{entries.count, entries.count}, {named.count, named.count}};
  const char* map = bytes.data();
  const int status = fault::guarded([&] {
    std::memcpy(provenance_copy.data(), map + header, provenance_len);
    XXH3_64bits_update(state.get(), provenance_copy.data(), provenance_len);
    XXH3_64bits_update(state.get(), map + entries.offset,
                       (entries.count + named.count) * k_package_index_record);
    for (int which = 0; which < 2; ++which) {
      const Index& index = which == 0 ? entries : named;
      const std::uint64_t shortest = which == 0 ? k_entry_header_size : k_package_record_frame;
      Found& first = found[which];
      for (std::size_t i = 0; i < index.count; ++i) {
        const char* record = map + index.offset + i * k_package_index_record;
        if (i > 0 && first.out_of_order == index.count &&
            std::memcmp(record - k_package_index_record, record, 32) >= 0)
          first.out_of_order = i;
        const auto offset = load_le<std::uint64_t>(record + 32);
        const auto length = load_le<std::uint64_t>(record + 40);
        if (first.outside == index.count &&
            (offset < data || offset > total || length > total - offset || length < shortest))
          first.outside = i;
      }
    }
    return 0;
  });
  if (status == fault::k_fault)
    return faulted();
  if (load_le<std::uint64_t>(at + 8) != XXH3_64bits_digest(state.get()))
    return damaged("fails its checksum (header, provenance or index damaged)");
  const auto entry_version = load_le<std::uint32_t>(at + 16);
  if (entry_version != static_cast<std::uint32_t>(k_format_version))
    return damaged("holds entries of format version " + std::to_string(entry_version) +
                   "; this jitcache reads " + std::to_string(k_format_version));
  auto provenance = parse_provenance(provenance_copy);
  if (!provenance)
    return damaged("has malformed provenance");
  for (int which = 0; which < 2; ++which) {
    const std::size_t end = which == 0 ? entries.count : named.count;
    const std::string index = which == 0 ? "index" : "record index";
    const Found& first = found[which];
    if (first.out_of_order < end && first.out_of_order <= first.outside)
      return damaged(index + " is out of order at record " + std::to_string(first.out_of_order));
    if (first.outside < end)
      return damaged(index + " record " + std::to_string(first.outside) +
                     " points outside the package");
  }
  provenance->package_version = version;
  provenance->entry_format_version = entry_version;
  provenance->entries = count;
  provenance->records = records;
  provenance->bytes = total;
  return PackageReader(bytes, entries, named, static_cast<std::size_t>(data),
                       std::move(*provenance));
}

Digest PackageReader::name_at(const Index& index, std::size_t i) const {
  Digest name;
  std::memcpy(name.bytes.data(), m_bytes.data() + index.offset + i * k_package_index_record,
              name.bytes.size());
  return name;
}

std::size_t PackageReader::search(const Index& index, const Digest& name) const {
  std::size_t low = 0, high = index.count;
  while (low < high) {
    const std::size_t mid = low + (high - low) / 2;
    const int order = std::memcmp(m_bytes.data() + index.offset + mid * k_package_index_record,
                                  name.bytes.data(), name.bytes.size());
    if (order == 0)
      return mid;
    if (order < 0)
      low = mid + 1;
    else
      high = mid;
  }
  return index.count;
}

std::optional<std::pair<std::size_t, std::size_t>> PackageReader::span_at(const Index& index,
                                                                          std::size_t i) const {
  const char* record = m_bytes.data() + index.offset + i * k_package_index_record;
  const auto offset = load_le<std::uint64_t>(record + 32);
  const auto length = load_le<std::uint64_t>(record + 40);
  // Checked by open(), and again here: a mapped file's index can change after open().
  if (offset < m_data || offset > m_bytes.size() || length > m_bytes.size() - offset)
    return std::nullopt;
  return std::pair<std::size_t, std::size_t>(static_cast<std::size_t>(offset),
                                             static_cast<std::size_t>(length));
}

std::pair<Digest, std::string_view> PackageReader::at(std::size_t i) const {
  const auto entry = span_at(m_entries, i);
  return {name_at(m_entries, i),
          entry ? m_bytes.substr(entry->first, entry->second) : std::string_view()};
}

std::optional<std::string_view> PackageReader::find(const Digest& key) const {
  const std::size_t i = search(m_entries, key);
  if (i == m_entries.count)
    return std::nullopt;
  return at(i).second;
}

Expected<std::string>
PackageReader::copy(const char* what, std::size_t i,
                    const std::optional<std::pair<std::size_t, std::size_t>>& span) const {
  if (!span)
    return damaged(what + std::to_string(i) +
                   " points outside the package (the file changed under its map)");
  const std::size_t offset = span->first, length = span->second;
  // Allocated outside the guard (see open()), not filled first: append() into reserved room
  // copies without allocating, and a fault part-way leaves the string as it was.
  std::string out;
  out.reserve(length);
  const char* from = m_bytes.data() + offset;
  if (fault::guarded([&] {
        out.append(from, length);
        return 0;
      }) == fault::k_fault)
    return faulted();
  return out;
}

Expected<std::optional<std::string>> PackageReader::read_named(const Index& index, const char* what,
                                                               const Digest& name) const {
  std::size_t i = 0;
  std::optional<std::pair<std::size_t, std::size_t>> span;
  if (fault::guarded([&] {
        i = search(index, name);
        if (i < index.count)
          span = span_at(index, i);
        return 0;
      }) == fault::k_fault)
    return faulted();
  if (i == index.count)
    return std::optional<std::string>();
  auto bytes = copy(what, i, span);
  if (!bytes)
    return std::move(bytes).error();
  return std::optional<std::string>(std::move(*bytes));
}

Expected<std::pair<Digest, std::string>>
PackageReader::read_indexed(const Index& index, const char* what, std::size_t i) const {
  Digest name;
  std::optional<std::pair<std::size_t, std::size_t>> span;
  if (fault::guarded([&] {
        name = name_at(index, i);
        span = span_at(index, i);
        return 0;
      }) == fault::k_fault)
    return faulted();
  auto bytes = copy(what, i, span);
  if (!bytes)
    return std::move(bytes).error();
  return std::pair<Digest, std::string>(name, std::move(*bytes));
}

Expected<std::optional<std::string>> PackageReader::read(const Digest& key) const {
  return read_named(m_entries, "index record ", key);
}

Expected<std::pair<Digest, std::string>> PackageReader::read_at(std::size_t i) const {
  return read_indexed(m_entries, "index record ", i);
}

Expected<std::optional<std::string>> PackageReader::read_record(const Digest& name) const {
  auto frame = read_named(m_records, "record index record ", name);
  if (!frame || !*frame)
    return frame;
  if (auto checked = unframe(name, **frame); !checked)
    return std::move(checked).error();
  return frame;
}

Expected<std::pair<Digest, std::string>> PackageReader::read_record_at(std::size_t i) const {
  auto frame = read_indexed(m_records, "record index record ", i);
  if (!frame)
    return frame;
  if (auto checked = unframe(frame->first, frame->second); !checked)
    return std::move(checked).error();
  return frame;
}

Expected<Provenance> write_package(const std::filesystem::path& file, const PackageTarget& target,
                                   std::vector<PackageEntry> entries,
                                   std::vector<PackageRecord> records) {
  std::sort(entries.begin(), entries.end(),
            [](const PackageEntry& a, const PackageEntry& b) { return a.key < b.key; });
  for (std::size_t i = 1; i < entries.size(); ++i)
    if (entries[i - 1].key == entries[i].key)
      return Error(ErrorCode::invalid_argument,
                   "key " + entries[i].key.hex() + " given twice for one package");
  if (entries.size() > k_package_max_entries)
    return Error(ErrorCode::invalid_argument,
                 std::to_string(entries.size()) +
                     " entries for one package; a package holds at most " +
                     std::to_string(k_package_max_entries));
  for (const PackageEntry& entry : entries)
    if (entry.bytes.size() < k_entry_header_size)
      return Error(ErrorCode::invalid_argument, "entry " + entry.key.hex() + " is " +
                                                    std::to_string(entry.bytes.size()) +
                                                    " bytes, shorter than an entry header");
  if (records.size() > k_package_max_records)
    return Error(ErrorCode::invalid_argument,
                 std::to_string(records.size()) +
                     " records for one package; a package holds at most " +
                     std::to_string(k_package_max_records));
  std::sort(records.begin(), records.end(),
            [](const PackageRecord& a, const PackageRecord& b) { return a.name < b.name; });
  for (std::size_t i = 1; i < records.size(); ++i)
    if (records[i - 1].name == records[i].name)
      return Error(ErrorCode::invalid_argument,
                   "record " + records[i].name.hex() + " given twice for one package");
  Provenance p;
  p.package_version = k_package_version;
  p.entry_format_version = static_cast<std::uint32_t>(k_format_version);
  p.jitcache_version = k_version;
  p.created = detail::clock().wall_ns() / 1'000'000'000;
  p.target = target;
  p.entries = entries.size();
  p.records = records.size();
  for (const PackageEntry& entry : entries) {
    const auto view = view_entry(entry.key, entry.bytes);
    const auto toolchain = view ? toolchain_of_stored(view->key_fields) : std::nullopt;
    if (toolchain && !toolchain->empty() &&
        std::find(p.toolchains.begin(), p.toolchains.end(), *toolchain) == p.toolchains.end())
      p.toolchains.push_back(*toolchain);
  }
  const std::string provenance = provenance_bytes(p);
  if (provenance.size() > k_package_max_provenance)
    return Error(ErrorCode::invalid_argument, "the package's provenance would be " +
                                                  std::to_string(provenance.size()) + " bytes (" +
                                                  std::to_string(p.toolchains.size()) +
                                                  " toolchains); a package has at most " +
                                                  std::to_string(k_package_max_provenance));
  std::vector<std::string> frames;
  frames.reserve(records.size());
  for (const PackageRecord& record : records)
    frames.push_back(frame(record));
  const std::uint64_t data = k_package_header_size + provenance.size() +
                             (entries.size() + records.size()) * k_package_index_record;
  std::string head(k_package_header_size, '\0');
  std::memcpy(head.data(), k_magic, sizeof k_magic);
  store_le<std::uint32_t>(head.data() + 4, k_package_version);
  store_le<std::uint32_t>(head.data() + 16, p.entry_format_version);
  store_le<std::uint32_t>(head.data() + 20, static_cast<std::uint32_t>(provenance.size()));
  store_le<std::uint64_t>(head.data() + 24, entries.size());
  store_le<std::uint64_t>(head.data() + 40, data);
  store_le<std::uint64_t>(head.data() + 48, records.size());
  head += provenance;
  std::uint64_t offset = data;
  const auto index = [&](const Digest& name, std::size_t length) {
    head.append(reinterpret_cast<const char*>(name.bytes.data()), name.bytes.size());
    append_le<std::uint64_t>(head, offset);
    append_le<std::uint64_t>(head, length);
    offset += length;
  };
  for (const PackageEntry& entry : entries)
    index(entry.key, entry.bytes.size());
  for (std::size_t i = 0; i < records.size(); ++i)
    index(records[i].name, frames[i].size());
  p.bytes = offset;
  store_le<std::uint64_t>(head.data() + 32, offset);
  store_le<std::uint64_t>(head.data() + 8, checksum(head, head.size()));

  const std::string name = file.string();
  const auto failed = [&](const std::string& what) {
    return Error(ErrorCode::io_error,
                 "cannot write package " + name + ": " + what +
                     (errno ? std::string(" (") + std::strerror(errno) + ")" : ""));
  };
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  Fd dir_fd{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir_fd.fd < 0)
    return failed("cannot open its directory");
  const std::string base = file.filename().string();
  struct stat st {};
  if (::fstatat(dir_fd.fd, base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
    errno = 0;
    return failed(S_ISLNK(st.st_mode) ? "it is a symbolic link" : "it is not a regular file");
  }
  const std::string temp = "." + base + ".tmp" + std::to_string(::getpid()) + "-" +
                           std::to_string(std::random_device{}());
  Fd out{::openat(dir_fd.fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0644)};
  if (out.fd < 0)
    return failed("cannot create a temporary file beside it");
  bool ok = write_all(out.fd, head);
  for (std::size_t i = 0; ok && i < entries.size(); ++i)
    ok = write_all(out.fd, entries[i].bytes);
  for (std::size_t i = 0; ok && i < frames.size(); ++i)
    ok = write_all(out.fd, frames[i]);
  if (!ok || ::fsync(out.fd) != 0 ||
      ::renameat(dir_fd.fd, temp.c_str(), dir_fd.fd, base.c_str()) != 0) {
    const Error error = failed(ok ? "sync or rename failed" : "write failed");
    ::unlinkat(dir_fd.fd, temp.c_str(), 0);
    return error;
  }
  ::fsync(dir_fd.fd); // the rename is durable; a failure here loses nothing already written
  return p;
}

} // namespace jitcache::detail
