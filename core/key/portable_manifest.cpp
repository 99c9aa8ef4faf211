#include "core/key/portable_manifest.hpp"

#include "core/key/file_stamp.hpp"
#include "core/key/manifest.hpp"
#include "core/key/sha256.hpp"
#include "core/support/byte_io.hpp"
#include "core/support/sealed_bytes.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>
#include <map>
#include <system_error>
#include <thread>

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

std::string encode_paths(const Dependencies& deps) {
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
    if (stamp_of(path).size > k_largest_candidate)
      return std::nullopt; // keyed by its stamp, which means nothing on another machine
    FileStamp stamp;
    auto content = read_stamped(path, stamp);
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

namespace {

// Files a proof needs on a thread of its own to be worth the thread's start (some 0.1 ms in a
// CUDA process; a file's stat and its record's word cost some microseconds).
constexpr std::size_t k_files_per_thread = 128;

// What one thread of a proof found of its share of the files.
struct FilesProven {
  std::vector<FileStamp> stamps;
  std::size_t vouched = 0, read = 0;
  bool held = false;
};

// Proves the files [begin, end) as prove_portable() does, with `installed` (one per thread:
// not thread-safe). Stops early once another share set `failed`; sets it when one does not
// hold.
FilesProven prove_files(const PortableFile* begin, const PortableFile* end,
                        InstalledFiles& installed, std::atomic<bool>& failed) {
  FilesProven out;
  out.stamps.reserve(static_cast<std::size_t>(end - begin));
  for (const PortableFile* file = begin; file != end; ++file) {
    if (failed.load(std::memory_order_relaxed))
      return out;
    // A header reached through links is stat'ed where they lead, as its record names it: the
    // same stat, and no second one to find it is that file.
    const std::string& at = file->installed && installed.leads_to(file->path, file->installed->file)
                                ? file->installed->file
                                : file->path;
    struct stat st {};
    bool held = ::stat(at.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                static_cast<std::uint64_t>(st.st_size) == file->size;
    FileStamp stamp = held ? stamp_from(file->path, st) : FileStamp{};
    if (held && file->installed && stamp.mtime_ns == file->mtime_ns &&
        installed.vouches(*file->installed, at, st)) {
      ++out.vouched;
    } else if (held) {
      // No export makes a file over k_largest_candidate: a hostile manifest's.
      auto content =
          file->size > k_largest_candidate ? std::nullopt : read_stamped(file->path, stamp);
      held = content && sha256_of(*content) == file->content;
      ++out.read;
    }
    if (!held) {
      failed.store(true, std::memory_order_relaxed);
      return out;
    }
    out.stamps.push_back(std::move(stamp));
  }
  out.held = true;
  return out;
}

// Whether every absent candidate of `manifest` is still not a regular file.
bool still_absent(const PortableManifest& manifest) {
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
      return false;
  }
  return true;
}

} // namespace

std::optional<Proven> prove_portable(const PortableManifest& manifest, InstalledFiles& installed,
                                     unsigned threads) {
  // The files in shares, one per thread, in order; this thread checks the absent candidates and
  // the listings meanwhile, then proves the first share.
  const std::size_t count = manifest.files.size();
  const std::size_t shares =
      std::clamp<std::size_t>(count / k_files_per_thread, 1, std::max(threads, 1u));
  const auto share = [&](std::size_t i) { return manifest.files.data() + count * i / shares; };
  std::atomic<bool> failed{false};
  std::vector<FilesProven> found(shares);
  std::vector<char> started(shares, 0);
  std::vector<std::thread> workers;
  {
    struct JoinAll {
      std::vector<std::thread>& threads;
      ~JoinAll() {
        for (std::thread& thread : threads)
          thread.join();
      }
    } join_all{workers};
    for (std::size_t i = 1; i < shares; ++i) {
      try {
        workers.emplace_back([&, i] {
          try {
            InstalledFiles own;
            found[i] = prove_files(share(i), share(i + 1), own, failed);
          } catch (...) { // out of memory: not proven
            failed.store(true);
          }
        });
        started[i] = 1;
      } catch (const std::system_error&) { // no thread to be had: proven below, on this one
      }
    }
    bool held = still_absent(manifest);
    for (const PortableListing& listing : manifest.listings)
      held = held && regular_files_in(listing.folder) == listing.names;
    if (!held)
      failed.store(true);
    for (std::size_t i = 0; i < shares && !failed.load(); ++i)
      if (!started[i])
        found[i] = prove_files(share(i), share(i + 1), installed, failed);
  }
  if (failed.load())
    return std::nullopt;
  Proven out;
  for (const PortableListing& listing : manifest.listings)
    out.deps.listed.push_back(listing.folder);
  out.deps.read.reserve(count);
  for (FilesProven& part : found) {
    if (!part.held)
      return std::nullopt;
    std::move(part.stamps.begin(), part.stamps.end(), std::back_inserter(out.deps.read));
    out.vouched += part.vouched;
    out.read += part.read;
  }
  out.deps.absent = manifest.absent;
  return out;
}

} // namespace jitcache::detail
