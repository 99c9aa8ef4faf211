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
  if (bytes.size() < k_package_header_size)
    return damaged("is truncated (" + std::to_string(bytes.size()) + " bytes)");
  // The header is copied under the guard and checked in the copy: what is checked is what is
  // used, however the file changes meanwhile.
  char at[k_package_header_size];
  if (fault::guarded([&] {
        std::memcpy(at, bytes.data(), sizeof at);
        return 0;
      }) == fault::k_fault)
    return faulted();
  if (std::memcmp(at, k_magic, sizeof k_magic) != 0)
    return damaged("has a bad magic number (not a jitcache package)");
  const auto version = load_le<std::uint32_t>(at + 4);
  if (version != k_package_version)
    return damaged("has format version " + std::to_string(version) + "; this jitcache reads " +
                   std::to_string(k_package_version));
  const auto provenance_len = load_le<std::uint32_t>(at + 20);
  const auto count = load_le<std::uint64_t>(at + 24);
  const auto total = load_le<std::uint64_t>(at + 32);
  const auto data = load_le<std::uint64_t>(at + 40);
  if (total != bytes.size())
    return damaged("is " + std::to_string(bytes.size()) + " bytes, its header says " +
                   std::to_string(total) + " (truncated or extended)");
  // Bounds on what the header can make every reader read and hash (the index, the provenance)
  // before its checksum is known, whatever size the file has (a sparse one costs no disk).
  if (count > k_package_max_entries)
    return damaged("header claims " + std::to_string(count) + " entries; a package holds at most " +
                   std::to_string(k_package_max_entries));
  if (provenance_len > k_package_max_provenance)
    return damaged("header claims " + std::to_string(provenance_len) +
                   " bytes of provenance; a package has at most " +
                   std::to_string(k_package_max_provenance));
  const std::uint64_t room = bytes.size() - k_package_header_size;
  // Each entry takes an index record and at least an entry header.
  if (provenance_len > room ||
      count > (room - provenance_len) / (k_package_index_record + k_entry_header_size))
    return damaged("is too small for the " + std::to_string(count) + " entries its header claims");
  if (data != k_package_header_size + provenance_len + count * k_package_index_record)
    return damaged("has inconsistent lengths in its header");
  const std::size_t index = k_package_header_size + provenance_len;

  // The provenance is copied (it is parsed, and what is parsed must be what was checksummed);
  // the index is hashed and checked where it lies. Nothing is allocated inside the guard: a
  // fault skips the destructors of what the body made.
  std::string provenance_copy(provenance_len, '\0');
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  if (!state)
    throw std::bad_alloc();
  XXH3_64bits_reset(state.get());
  XXH3_64bits_update(state.get(), at + k_checked_offset, k_package_header_size - k_checked_offset);
  std::uint64_t out_of_order = count, outside = count; // the first record found so, if any
  const char* map = bytes.data();
  const int status = fault::guarded([&] {
    std::memcpy(provenance_copy.data(), map + k_package_header_size, provenance_len);
    XXH3_64bits_update(state.get(), provenance_copy.data(), provenance_len);
    XXH3_64bits_update(state.get(), map + index, count * k_package_index_record);
    for (std::uint64_t i = 0; i < count; ++i) {
      const char* record = map + index + i * k_package_index_record;
      if (i > 0 && out_of_order == count &&
          std::memcmp(record - k_package_index_record, record, 32) >= 0)
        out_of_order = i;
      const auto offset = load_le<std::uint64_t>(record + 32);
      const auto length = load_le<std::uint64_t>(record + 40);
      if (outside == count && (offset < data || offset > total || length > total - offset ||
                               length < k_entry_header_size))
        outside = i;
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
  if (out_of_order < count && out_of_order <= outside)
    return damaged("index is out of order at record " + std::to_string(out_of_order));
  if (outside < count)
    return damaged("index record " + std::to_string(outside) + " points outside the package");
  provenance->entry_format_version = entry_version;
  provenance->entries = count;
  provenance->bytes = total;
  return PackageReader(bytes, index, static_cast<std::size_t>(data), std::move(*provenance));
}

Digest PackageReader::key_at(std::size_t i) const {
  Digest key;
  std::memcpy(key.bytes.data(), m_bytes.data() + m_index + i * k_package_index_record,
              key.bytes.size());
  return key;
}

std::size_t PackageReader::search(const Digest& key) const {
  std::size_t low = 0, high = size();
  while (low < high) {
    const std::size_t mid = low + (high - low) / 2;
    const int order = std::memcmp(m_bytes.data() + m_index + mid * k_package_index_record,
                                  key.bytes.data(), key.bytes.size());
    if (order == 0)
      return mid;
    if (order < 0)
      low = mid + 1;
    else
      high = mid;
  }
  return size();
}

std::optional<std::pair<std::size_t, std::size_t>> PackageReader::entry_at(std::size_t i) const {
  const char* record = m_bytes.data() + m_index + i * k_package_index_record;
  const auto offset = load_le<std::uint64_t>(record + 32);
  const auto length = load_le<std::uint64_t>(record + 40);
  // Checked by open(), and again here: a mapped file's index can change after open().
  if (offset < m_data || offset > m_bytes.size() || length > m_bytes.size() - offset)
    return std::nullopt;
  return std::pair<std::size_t, std::size_t>(static_cast<std::size_t>(offset),
                                             static_cast<std::size_t>(length));
}

std::pair<Digest, std::string_view> PackageReader::at(std::size_t i) const {
  const auto entry = entry_at(i);
  return {key_at(i), entry ? m_bytes.substr(entry->first, entry->second) : std::string_view()};
}

std::optional<std::string_view> PackageReader::find(const Digest& key) const {
  const std::size_t i = search(key);
  if (i == size())
    return std::nullopt;
  return at(i).second;
}

Expected<std::string>
PackageReader::copy(std::size_t i,
                    const std::optional<std::pair<std::size_t, std::size_t>>& entry) const {
  if (!entry)
    return damaged("index record " + std::to_string(i) +
                   " points outside the package (the file changed under its map)");
  const std::size_t offset = entry->first, length = entry->second;
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

Expected<std::optional<std::string>> PackageReader::read(const Digest& key) const {
  std::size_t i = 0;
  std::optional<std::pair<std::size_t, std::size_t>> entry;
  if (fault::guarded([&] {
        i = search(key);
        if (i < size())
          entry = entry_at(i);
        return 0;
      }) == fault::k_fault)
    return faulted();
  if (i == size())
    return std::optional<std::string>();
  auto bytes = copy(i, entry);
  if (!bytes)
    return std::move(bytes).error();
  return std::optional<std::string>(std::move(*bytes));
}

Expected<std::pair<Digest, std::string>> PackageReader::read_at(std::size_t i) const {
  Digest key;
  std::optional<std::pair<std::size_t, std::size_t>> entry;
  if (fault::guarded([&] {
        key = key_at(i);
        entry = entry_at(i);
        return 0;
      }) == fault::k_fault)
    return faulted();
  auto bytes = copy(i, entry);
  if (!bytes)
    return std::move(bytes).error();
  return std::pair<Digest, std::string>(key, std::move(*bytes));
}

Expected<Provenance> write_package(const std::filesystem::path& file, const PackageTarget& target,
                                   std::vector<PackageEntry> entries) {
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
  Provenance p;
  p.entry_format_version = static_cast<std::uint32_t>(k_format_version);
  p.jitcache_version = k_version;
  p.created = detail::clock().wall_ns() / 1'000'000'000;
  p.target = target;
  p.entries = entries.size();
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
  const std::uint64_t data =
      k_package_header_size + provenance.size() + entries.size() * k_package_index_record;
  std::string head(k_package_header_size, '\0');
  std::memcpy(head.data(), k_magic, sizeof k_magic);
  store_le<std::uint32_t>(head.data() + 4, k_package_version);
  store_le<std::uint32_t>(head.data() + 16, p.entry_format_version);
  store_le<std::uint32_t>(head.data() + 20, static_cast<std::uint32_t>(provenance.size()));
  store_le<std::uint64_t>(head.data() + 24, entries.size());
  store_le<std::uint64_t>(head.data() + 40, data);
  head += provenance;
  std::uint64_t offset = data;
  for (const PackageEntry& entry : entries) {
    head.append(reinterpret_cast<const char*>(entry.key.bytes.data()), entry.key.bytes.size());
    append_le<std::uint64_t>(head, offset);
    append_le<std::uint64_t>(head, entry.bytes.size());
    offset += entry.bytes.size();
  }
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
