#include "core/key/includes.hpp"

#include "core/support/byte_io.hpp"
#include "core/support/fork_safe_mutex.hpp"

#include <sys/stat.h>

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace jitcache::detail {

namespace {

namespace fs = std::filesystem;

struct Directive {
  std::string name;
  enum Kind { quoted, angled, computed } kind; // "x", <x>, or MACRO
};

// Finds `#include "x"` / `#include <x>` lines. Comments on the directive line are ignored;
// block comments spanning lines are not tracked (a commented-out include only adds key bytes).
std::vector<Directive> directives(std::string_view text) {
  std::vector<Directive> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    std::size_t i = line.find_first_not_of(" \t");
    if (i == std::string_view::npos || line[i] != '#')
      continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string_view::npos || line.compare(i, 7, "include") != 0)
      continue;
    i = line.find_first_not_of(" \t", i + 7);
    if (i == std::string_view::npos)
      continue;
    if (line[i] != '"' && line[i] != '<') {
      // #include MACRO: the target is only known after preprocessing.
      std::string_view text = line.substr(i);
      text = text.substr(0, text.find("//"));
      while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
      if (!text.empty())
        out.push_back({std::string(text), Directive::computed});
      continue;
    }
    const char close = line[i] == '"' ? '"' : '>';
    const std::size_t j = line.find(close, i + 1);
    if (j == std::string_view::npos || j == i + 1)
      continue;
    out.push_back({std::string(line.substr(i + 1, j - i - 1)),
                   close == '"' ? Directive::quoted : Directive::angled});
  }
  return out;
}

// A header as this process read it: its content and #include directives.
struct KnownHeader {
  FileStamp stamp;
  std::string content;
  std::vector<Directive> directives;
};

// The headers this process read, by path: a process compiles many kernels on the same headers
// (every CuPy kernel includes <cupy/carray.cuh>, and through it a few hundred toolkit headers:
// 3 MB), and reading and parsing them again for each kernel's key cost more than 1% of its
// compile. A header is taken from here while stat(2) gives the stamp it was read with, and only
// a stamp old enough to vouch for its content (too_recent) is kept: the manifests' test.
// Bounded: past k_known_bytes the headers are forgotten and read again.
class KnownHeaders {
public:
  static KnownHeaders& instance() {
    static KnownHeaders* const known = new KnownHeaders; // never destroyed: used during exit
    return *known;
  }

  // The header at `path` (a regular file) with `stamp` set as read_stamped() sets it; nullptr
  // when it cannot be read.
  std::shared_ptr<const KnownHeader> read(const std::string& path, FileStamp& stamp) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return nullptr; // read_stamped() would find nothing either (no wait on a FIFO)
    stamp = stamp_from(path, st);
    if (!too_recent(stamp, &real_time_ns)) {
      std::lock_guard<ForkSafeMutex> lock(m_mutex);
      if (auto it = m_headers.find(path); it != m_headers.end() && it->second->stamp == stamp)
        return it->second;
    }
    auto header = std::make_shared<KnownHeader>();
    auto content = read_stamped(path, header->stamp);
    if (!content)
      return nullptr;
    stamp = header->stamp;
    header->content = std::move(*content);
    header->directives = directives(header->content);
    if (!too_recent(stamp, &real_time_ns)) {
      std::lock_guard<ForkSafeMutex> lock(m_mutex);
      if (m_bytes + header->content.size() > k_known_bytes) {
        m_headers.clear();
        m_bytes = 0;
      }
      auto& slot = m_headers[path];
      m_bytes += header->content.size() - (slot ? slot->content.size() : 0);
      slot = header;
    }
    return header;
  }

  // `dir` / `name`, lexically normal (see Scanner::scan): a pure function, but the path
  // operations of a toolkit's thousands of searches cost milliseconds per key.
  std::string candidate(const fs::path& dir, const std::string& name) {
    std::string search = dir.native();
    search.push_back('\0');
    search += name;
    {
      std::lock_guard<ForkSafeMutex> lock(m_mutex);
      if (auto it = m_candidates.find(search); it != m_candidates.end())
        return it->second;
    }
    std::string normal = (dir / name).lexically_normal().string();
    std::lock_guard<ForkSafeMutex> lock(m_mutex);
    if (m_candidates.size() >= k_known_candidates)
      m_candidates.clear();
    m_candidates.emplace(std::move(search), normal);
    return normal;
  }

private:
  static constexpr std::size_t k_known_bytes = std::size_t(64) << 20;
  static constexpr std::size_t k_known_candidates = 100000;
  ForkSafeMutex m_mutex;
  std::unordered_map<std::string, std::string> m_candidates;
  std::unordered_map<std::string, std::shared_ptr<const KnownHeader>> m_headers;
  std::size_t m_bytes = 0;
};

class Scanner {
public:
  Scanner(const std::vector<fs::path>& dirs, const std::map<std::string, std::string>& in_memory)
      : m_dirs(dirs), m_in_memory(in_memory) {}

  void scan(std::string_view text, const std::optional<fs::path>& current_dir, int depth) {
    scan(directives(text), current_dir, depth);
  }

  void scan(const std::vector<Directive>& found, const std::optional<fs::path>& current_dir,
            int depth) {
    if (depth > 200) // include cycles without guards; the compiler reports those
      return;
    for (const Directive& d : found) {
      if (d.kind == Directive::computed) {
        m_out.computed.push_back({d.name, current_dir.value_or(fs::path()), !current_dir});
        continue;
      }
      if (auto it = m_in_memory.find(d.name); it != m_in_memory.end()) {
        if (m_seen.insert("mem:" + d.name).second) {
          auto owner = std::make_shared<const std::string>(it->second);
          m_out.headers.push_back({d.name, k_in_memory_path, *owner, owner, {}});
          scan(it->second, std::nullopt, depth + 1);
        }
        continue;
      }
      // The same directive from the same folder finds what it found before (a header scanned
      // already, or nothing): headers include each other thousands of times over (CUB's 622
      // headers hold 3,482 directives), and each search costs a failed open per folder tried.
      // Keyed by the search itself: a quoted directive searched from a folder (even "", the
      // folder of a header found through `-I.`) is never taken for an angled one.
      const bool relative = d.kind == Directive::quoted && current_dir;
      if (!m_searched
               .insert((relative ? "q" + current_dir->native() : std::string("a")) + '\0' + d.name)
               .second)
        continue;
      // Lexical normalisation only: resolving symlinks costs a syscall per path component,
      // and a file reached under two spellings is merely read twice.
      KnownHeaders& known = KnownHeaders::instance();
      std::vector<std::string> candidates;
      if (relative)
        candidates.push_back(known.candidate(*current_dir, d.name));
      for (const fs::path& dir : m_dirs)
        candidates.push_back(known.candidate(dir, d.name));
      bool resolved_somewhere = false;
      for (const std::string& resolved : candidates) {
        resolved_somewhere = m_seen.count(resolved) > 0;
        if (resolved_somewhere)
          break;
        detail::FileStamp stamp;
        auto header = folder_exists(resolved) ? known.read(resolved, stamp) : nullptr;
        if (!header) {
          m_absent.insert(resolved);
          continue;
        }
        m_seen.insert(resolved);
        m_out.headers.push_back({d.name, resolved, header->content,
                                 std::shared_ptr<const std::string>(header, &header->content),
                                 std::move(stamp)});
        scan(header->directives, fs::path(resolved).parent_path(), depth + 1);
        resolved_somewhere = true;
        break;
      }
      if (!resolved_somewhere && d.kind == Directive::quoted)
        m_unresolved.insert(d.name);
    }
  }

  // Whether the folder `path` would be in exists, looked at once per scan: most candidates a
  // toolkit's includes try are in folders that do not exist (cuda/std/... under every -I folder
  // searched before the toolkit's), and one stat(2) of the folder answers for all of them.
  bool folder_exists(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0)
      return true;
    auto [at, added] = m_folders.try_emplace(path.substr(0, slash), false);
    if (added) {
      struct stat st {};
      at->second = ::stat(at->first.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
    return at->second;
  }

  IncludeScan take() {
    m_out.absent.assign(m_absent.begin(), m_absent.end());
    m_out.unresolved.assign(m_unresolved.begin(), m_unresolved.end());
    return std::move(m_out);
  }

private:
  const std::vector<fs::path>& m_dirs;
  const std::map<std::string, std::string>& m_in_memory;
  std::set<std::string> m_seen;
  std::set<std::string> m_absent;
  std::set<std::string> m_unresolved;
  std::unordered_set<std::string> m_searched;      ///< folder (quoted includes) and name searched
  std::unordered_map<std::string, bool> m_folders; ///< folder_exists()
  IncludeScan m_out;
};

[[maybe_unused]] const bool g_includes_made_before_main =
    (KnownHeaders::instance(), true); // see ForkSafeMutex

} // namespace

std::string include_directives(std::string_view text) {
  std::string out;
  for (const Directive& d : directives(text)) {
    out += static_cast<char>('0' + d.kind);
    append_sized<std::uint32_t>(out, d.name);
  }
  return out;
}

std::shared_ptr<const std::string> read_header(const std::string& path, FileStamp& stamp) {
  auto header = KnownHeaders::instance().read(path, stamp);
  if (!header)
    return nullptr;
  return std::shared_ptr<const std::string>(header, &header->content);
}

std::vector<std::string> split_options(std::string_view options) {
  std::vector<std::string> out;
  std::string current;
  bool in_token = false;
  char quote = 0;
  for (char c : options) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        current += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
      in_token = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_token)
        out.push_back(std::move(current));
      current.clear();
      in_token = false;
    } else {
      current += c;
      in_token = true;
    }
  }
  if (in_token)
    out.push_back(std::move(current));
  return out;
}

IncludeScan scan_includes(std::string_view source, const std::vector<fs::path>& include_dirs,
                          const std::map<std::string, std::string>& in_memory) {
  Scanner scanner(include_dirs, in_memory);
  std::error_code ec; // a removed current directory: quoted includes of the source find nothing
  scanner.scan(source, fs::current_path(ec), 0);
  return scanner.take();
}

} // namespace jitcache::detail
