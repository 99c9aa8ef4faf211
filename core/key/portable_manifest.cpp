#include "core/key/portable_manifest.hpp"

#include "core/key/file_stamp.hpp"
#include "core/key/manifest.hpp"
#include "core/key/sha256.hpp"
#include "core/support/byte_io.hpp"
#include "core/support/sealed_bytes.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace jitcache::detail {

namespace {

constexpr std::string_view k_portable_magic = "JCPM";
constexpr std::uint32_t k_portable_version = 1;
constexpr std::string_view k_paths_magic = "JCDP";

void append_strings(std::string& out, const std::vector<std::string>& strings) {
  append_le<std::uint64_t>(out, strings.size());
  for (const std::string& s : strings)
    append_sized(out, s);
}

bool take_strings(std::string_view& in, std::vector<std::string>& strings) {
  std::uint64_t count = 0;
  if (!take_le(in, count) || count > in.size()) // each takes at least one byte
    return false;
  strings.resize(static_cast<std::size_t>(count));
  for (std::string& s : strings)
    if (!take_sized(in, s))
      return false;
  return true;
}

Digest sha256_of(std::string_view bytes) {
  Sha256 sha;
  sha.update(bytes);
  return sha.finish();
}

} // namespace

std::optional<std::vector<std::string>> regular_files_in(const std::string& folder) {
  DIR* dir = ::opendir(folder.c_str());
  if (!dir)
    return std::nullopt;
  std::vector<std::string> names;
  while (const dirent* d = ::readdir(dir)) {
    bool regular = d->d_type == DT_REG;
    if (d->d_type == DT_LNK || d->d_type == DT_UNKNOWN) {
      struct stat st {};
      regular = ::fstatat(::dirfd(dir), d->d_name, &st, 0) == 0 && S_ISREG(st.st_mode);
    }
    if (regular)
      names.emplace_back(d->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::string encode_portable(const PortableManifest& manifest) {
  std::string body;
  append_le(body, k_portable_version);
  append_sized(body, manifest.key);
  append_le<std::uint64_t>(body, manifest.files.size());
  for (const PortableFile& file : manifest.files) {
    append_sized(body, file.path);
    append_le(body, file.size);
    append_le(body, file.mtime_ns);
    body.append(reinterpret_cast<const char*>(file.content.bytes.data()),
                file.content.bytes.size());
    body += file.installed ? '\1' : '\0';
    if (file.installed) {
      append_sized(body, file.installed->file);
      append_sized(body, file.installed->record);
      append_sized(body, file.installed->entry);
      append_sized(body, file.installed->record_hash);
    }
  }
  append_strings(body, manifest.absent);
  append_le<std::uint64_t>(body, manifest.listings.size());
  for (const PortableListing& listing : manifest.listings) {
    append_sized(body, listing.folder);
    append_strings(body, listing.names);
  }
  return seal(k_portable_magic, body);
}

std::optional<PortableManifest> decode_portable(std::string_view bytes) {
  auto in = unseal(k_portable_magic, bytes);
  if (!in)
    return std::nullopt;
  std::uint32_t version = 0;
  std::uint64_t count = 0;
  PortableManifest out;
  if (!take_le(*in, version) || version != k_portable_version || !take_sized(*in, out.key) ||
      !take_le(*in, count) || count > in->size())
    return std::nullopt;
  out.files.resize(static_cast<std::size_t>(count));
  for (PortableFile& file : out.files) {
    char installed = 0;
    if (!take_sized(*in, file.path) || !take_le(*in, file.size) || !take_le(*in, file.mtime_ns) ||
        in->size() < file.content.bytes.size() + 1)
      return std::nullopt;
    std::memcpy(file.content.bytes.data(), in->data(), file.content.bytes.size());
    in->remove_prefix(file.content.bytes.size());
    installed = in->front();
    in->remove_prefix(1);
    if (installed == '\1') {
      file.installed.emplace();
      if (!take_sized(*in, file.installed->file) || !take_sized(*in, file.installed->record) ||
          !take_sized(*in, file.installed->entry) || !take_sized(*in, file.installed->record_hash))
        return std::nullopt;
    } else if (installed != '\0') {
      return std::nullopt;
    }
  }
  if (!take_strings(*in, out.absent) || !take_le(*in, count) || count > in->size())
    return std::nullopt;
  out.listings.resize(static_cast<std::size_t>(count));
  for (PortableListing& listing : out.listings)
    if (!take_sized(*in, listing.folder) || !take_strings(*in, listing.names))
      return std::nullopt;
  if (!in->empty())
    return std::nullopt;
  return out;
}

std::optional<std::string> portable_key(std::string_view bytes) {
  auto in = unseal(k_portable_magic, bytes);
  std::uint32_t version = 0;
  std::string key;
  if (!in || !take_le(*in, version) || version != k_portable_version || !take_sized(*in, key))
    return std::nullopt;
  return key;
}

Digest paths_name(const Digest& key_name) {
  return record_name("key paths",
                     {std::string_view(reinterpret_cast<const char*>(key_name.bytes.data()),
                                       key_name.bytes.size())});
}

std::string encode_paths(const Dependencies& of) {
  const Dependencies& deps = of.files();
  std::vector<std::string> read;
  for (const FileStamp& stamp : deps.read)
    read.push_back(stamp.path);
  std::string body;
  append_strings(body, read);
  append_strings(body, deps.absent);
  append_strings(body, deps.listed);
  return seal(k_paths_magic, body);
}

std::optional<PortableManifest> make_portable(std::string key, std::string_view paths,
                                              InstalledFiles& installed) {
  auto in = unseal(k_paths_magic, paths);
  std::vector<std::string> read, listed;
  PortableManifest out;
  if (!in || !take_strings(*in, read) || !take_strings(*in, out.absent) ||
      !take_strings(*in, listed) || !in->empty())
    return std::nullopt;
  for (std::string& folder : listed) {
    auto names = regular_files_in(folder);
    if (!names)
      return std::nullopt;
    out.listings.push_back({std::move(folder), std::move(*names)});
  }
  out.key = std::move(key);
  for (std::string& path : read) {
    // A larger one is keyed by its stamp, which means nothing on another machine.
    FileStamp stamp;
    auto content = read_stamped(path, stamp, k_largest_candidate);
    if (!content)
      return std::nullopt;
    PortableFile file;
    file.size = stamp.size;
    file.mtime_ns = stamp.mtime_ns;
    file.content = sha256_of(*content);
    file.installed = installed.find(path, *content, &file.content);
    file.path = std::move(path);
    out.files.push_back(std::move(file));
  }
  return out;
}

std::optional<Proven> prove_portable(const PortableManifest& manifest, InstalledFiles& installed) {
  Proven out;
  // Most absent candidates are in folders that do not exist at all (CUB's: 68 of 79 folders, 999
  // paths): one stat per folder answers for every path in it.
  std::map<std::string, bool, std::less<>> folder_is_there;
  for (const std::string& path : manifest.absent) {
    if (const auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
      auto [at, added] = folder_is_there.try_emplace(path.substr(0, slash), false);
      if (added) {
        struct stat st {};
        at->second = ::stat(at->first.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      }
      if (!at->second)
        continue;
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      return std::nullopt;
  }
  for (const PortableListing& listing : manifest.listings) {
    if (regular_files_in(listing.folder) != listing.names)
      return std::nullopt;
    out.deps.listed.push_back(listing.folder);
  }
  for (const PortableFile& file : manifest.files) {
    // A header reached through links is stat'ed where they lead, as its record names it: the
    // same stat, and no second one to find it is that file.
    const std::string& at = file.installed && installed.leads_to(file.path, file.installed->file)
                                ? file.installed->file
                                : file.path;
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::uint64_t>(st.st_size) != file.size)
      return std::nullopt;
    FileStamp stamp = stamp_from(file.path, st);
    if (file.installed && stamp.mtime_ns == file.mtime_ns &&
        installed.vouches(*file.installed, at, st)) {
      ++out.vouched;
    } else {
      // None larger is exported: a hostile manifest's (or a file grown since the stat) is not read.
      auto content = read_stamped(file.path, stamp, k_largest_candidate);
      if (!content || sha256_of(*content) != file.content)
        return std::nullopt;
      ++out.read;
    }
    out.deps.read.push_back(std::move(stamp));
  }
  out.deps.absent = manifest.absent;
  return out;
}

} // namespace jitcache::detail
