#include "core/key/installed_files.hpp"

#include "core/key/file_stamp.hpp"
#include "core/key/sha256.hpp"
#include "core/support/regular_file.hpp"

#include <openssl/evp.h>
#include <xxhash.h>

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace jitcache::detail {

namespace {

constexpr std::string_view k_dpkg_info = "/var/lib/dpkg/info/";
constexpr std::string_view k_md5sums = ".md5sums";
constexpr std::string_view k_dist_info = ".dist-info";
/// The longest record read: a wheel's RECORD is tens of kilobytes, a dpkg md5sums less.
constexpr std::uint64_t k_max_record_bytes = 16u << 20;

bool ends_with(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

std::string join(const std::string& folder, std::string_view name) {
  return folder == "/" ? "/" + std::string(name) : folder + "/" + std::string(name);
}

// The names in `folder` ending with `suffix`, sorted (a folder's order is not stable).
std::vector<std::string> names_in(const std::string& folder, std::string_view suffix) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(folder.c_str());
  if (!dir)
    return names;
  while (const dirent* d = ::readdir(dir))
    if (ends_with(d->d_name, suffix) && std::string_view(d->d_name) != suffix)
      names.emplace_back(d->d_name);
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::string hex(const unsigned char* bytes, std::size_t size) {
  std::string out;
  char two[3];
  for (std::size_t i = 0; i < size; ++i) {
    std::snprintf(two, sizeof two, "%02x", bytes[i]);
    out += two;
  }
  return out;
}

// pip's form: "sha256=" and the URL-safe base64 of the digest, without padding.
std::string pip_digest(std::string_view content, const Digest* sha256) {
  Digest digest;
  if (sha256) {
    digest = *sha256;
  } else {
    Sha256 sha;
    sha.update(content);
    digest = sha.finish();
  }
  static constexpr char k_alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out = "sha256=";
  std::uint32_t bits = 0;
  int held = 0;
  for (unsigned char byte : digest.bytes) {
    bits = (bits << 8) | byte;
    held += 8;
    while (held >= 6) {
      held -= 6;
      out += k_alphabet[(bits >> held) & 63];
    }
  }
  if (held > 0)
    out += k_alphabet[(bits << (6 - held)) & 63];
  return out;
}

// dpkg's form: the hex MD5 (EVP: only at export, where its first use's setup does not matter).
std::string dpkg_digest(std::string_view content) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(content.data(), content.size(), md, &size, EVP_md5(), nullptr) != 1)
    return {};
  return hex(md, size);
}

bool is_dpkg(const std::string& record) {
  return record.compare(0, k_dpkg_info.size(), k_dpkg_info) == 0 && ends_with(record, k_md5sums);
}

} // namespace

bool entry_names(std::string_view entry, std::string_view root, std::string_view path) {
  std::string_view below;
  if (root == "/") {
    if (path.empty() || path.front() != '/')
      return false;
    below = path.substr(1);
  } else {
    if (path.size() <= root.size() + 1 || path.substr(0, root.size()) != root ||
        path[root.size()] != '/')
      return false;
    below = path.substr(root.size() + 1);
  }
  if (below.empty() || entry.find("..") != std::string_view::npos)
    return false;
  return entry == below || (entry.size() > below.size() && ends_with(entry, below) &&
                            entry[entry.size() - below.size() - 1] == '/');
}

std::string InstalledFiles::root_of(const std::string& record) {
  if (is_dpkg(record))
    return "/";
  std::string root = parent_of(parent_of(record));
  if (name_of(root) == "dist-info")
    root = parent_of(root);
  return root;
}

const InstalledFiles::Record& InstalledFiles::record(const std::string& file, bool parse) {
  auto [at, added] = m_records.try_emplace(file);
  Record& out = at->second;
  if (!added && (!parse || !out.lines.empty() || !out.ok))
    return out;
  struct stat st {};
  auto text = read_regular_file(file, k_max_record_bytes, &st);
  if (!text) {
    out.ok = false;
    return out;
  }
  out.ctime_ns = stamp_from(file, st).ctime_ns;
  const XXH128_hash_t hash = XXH3_128bits(text->data(), text->size());
  out.hash.assign(reinterpret_cast<const char*>(&hash), sizeof hash);
  out.ok = true;
  if (!parse)
    return out;
  const bool dpkg = is_dpkg(file);
  std::string_view rest = *text;
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (dpkg) { // "<32 hex digits>  <path>"
      if (line.size() > 34 && line.substr(32, 2) == "  ")
        out.lines[std::string(line.substr(34))] = Line{std::string(line.substr(0, 32)), -1};
      continue;
    }
    // "<path>,<algorithm>=<digest>,<size>", split from the right: a path may hold commas
    // (then the csv module quotes it).
    const auto size_comma = line.rfind(',');
    if (size_comma == std::string_view::npos || size_comma == 0)
      continue;
    const auto digest_comma = line.rfind(',', size_comma - 1);
    if (digest_comma == std::string_view::npos)
      continue;
    std::string_view path = line.substr(0, digest_comma);
    if (path.size() >= 2 && path.front() == '"' && path.back() == '"') {
      path = path.substr(1, path.size() - 2);
      if (path.find('"') != std::string_view::npos)
        continue; // an escaped quote: left to reading the file
    }
    const std::string_view digest = line.substr(digest_comma + 1, size_comma - digest_comma - 1);
    std::int64_t size = -1;
    const std::string_view size_text = line.substr(size_comma + 1);
    if (digest.empty() ||
        std::from_chars(size_text.data(), size_text.data() + size_text.size(), size).ec !=
            std::errc())
      continue; // RECORD's own line has neither
    out.lines[std::string(path)] = Line{std::string(digest), size};
  }
  return out;
}

const std::vector<std::string>& InstalledFiles::records_in(const std::string& folder) {
  auto [at, added] = m_records_in.try_emplace(folder);
  if (!added)
    return at->second;
  std::vector<std::string>& found = at->second;
  for (const std::string& where : {folder, join(folder, "dist-info")})
    for (const std::string& name : names_in(where, k_dist_info))
      found.push_back(join(join(where, name), "RECORD"));
  if (folder == "/")
    for (const std::string& name : names_in(std::string(k_dpkg_info), k_md5sums))
      found.push_back(std::string(k_dpkg_info) + name);
  return found;
}

std::optional<InstalledProof> InstalledFiles::find(const std::string& path,
                                                   std::string_view content, const Digest* sha256) {
  if (auto found = find_as(path, content, sha256))
    return found;
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real)
    return std::nullopt;
  const std::string resolved(real);
  std::free(real);
  if (resolved == path)
    return std::nullopt;
  return find_as(resolved, content, sha256);
}

std::optional<InstalledProof>
InstalledFiles::find_as(const std::string& path, std::string_view content, const Digest* sha256) {
  std::string pip, dpkg; // the file's digests, made when first needed
  for (std::string folder = parent_of(path);; folder = parent_of(folder)) {
    for (const std::string& file : records_in(folder)) {
      const Record& listed = record(file, true);
      if (!listed.ok)
        continue;
      const bool from_dpkg = is_dpkg(file);
      std::string& digest = from_dpkg ? dpkg : pip;
      if (digest.empty())
        digest = from_dpkg ? dpkg_digest(content) : pip_digest(content, sha256);
      const std::string root = root_of(file);
      const auto proves = [&](const std::string& entry, const Line& line) {
        return line.digest == digest && entry_names(entry, root, path) &&
               (line.size < 0 || static_cast<std::uint64_t>(line.size) == content.size());
      };
      const std::string below = root == "/" ? path.substr(1) : path.substr(root.size() + 1);
      if (auto line = listed.lines.find(below);
          line != listed.lines.end() && proves(line->first, line->second))
        return InstalledProof{path, file, line->first, listed.hash};
      if (!from_dpkg) // a wheel's files moved under another prefix: a few thousand lines
        for (const auto& [entry, line] : listed.lines)
          if (proves(entry, line))
            return InstalledProof{path, file, entry, listed.hash};
    }
    if (folder == "/")
      return std::nullopt;
  }
}

const std::string& InstalledFiles::resolved(const std::string& folder) {
  if (auto at = m_resolved.find(folder); at != m_resolved.end())
    return at->second;
  std::string out;
  const std::string name = name_of(folder);
  if (folder == "/") {
    out = "/";
  } else if (name.empty() || name == "." || name == "..") { // not lexically normal: the slow way
    if (char* real = ::realpath(folder.c_str(), nullptr)) {
      out = real;
      std::free(real);
    }
  } else if (const std::string parent = resolved(parent_of(folder)); !parent.empty()) {
    const std::string here = join(parent, name);
    struct stat st {};
    if (::lstat(here.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        out = here;
      } else if (S_ISLNK(st.st_mode)) {
        if (char* real = ::realpath(here.c_str(), nullptr)) {
          out = real;
          std::free(real);
        }
      }
    }
  }
  return m_resolved.emplace(folder, std::move(out)).first->second;
}

bool InstalledFiles::leads_to(const std::string& path, const std::string& file) {
  if (path == file)
    return true;
  const std::string name = name_of(path);
  if (name != name_of(file))
    return false;
  const std::string& folder = resolved(parent_of(path));
  return !folder.empty() && folder == parent_of(file);
}

bool InstalledFiles::vouches(const InstalledProof& proof, const std::string& path,
                             const struct stat& st) {
  if (!S_ISREG(st.st_mode) || !entry_names(proof.entry, root_of(proof.record), proof.file))
    return false;
  if (proof.file != path) { // reached through symbolic links: the same file?
    struct stat named {};
    if (::stat(proof.file.c_str(), &named) != 0 || named.st_dev != st.st_dev ||
        named.st_ino != st.st_ino)
      return false;
  }
  const Record& listed = record(proof.record, false);
  if (!listed.ok || listed.hash != proof.record_hash)
    return false;
  return stamp_from(path, st).ctime_ns <= listed.ctime_ns;
}

} // namespace jitcache::detail
