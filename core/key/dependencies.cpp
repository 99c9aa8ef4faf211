#include "core/key/dependencies.hpp"

#include "core/engine/proven_stamps.hpp"
#include "core/key/includes.hpp"
#include "core/key/key_fields.hpp"
#include "core/support/byte_io.hpp"
#include "core/support/fork_safe_mutex.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>

#include <sys/stat.h>

namespace jitcache::detail {

namespace {

namespace fs = std::filesystem;

std::string strip_quotes(std::string value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front())
    return value.substr(1, value.size() - 2);
  return value;
}

// The stamps guards_of() vouches with (before its check of their age).
std::vector<FileStamp> guard_stamps(const Dependencies& of) {
  const Dependencies& deps = of.files();
  std::vector<detail::FileStamp> out = deps.read;
  std::set<std::string> dirs(deps.listed.begin(), deps.listed.end());
  std::error_code ec;
  // The current directory is searched last, and is where tools write (a build's outputs, a
  // scratch folder): its stamp would change with every file made there and prove no key. A name
  // absent there is vouched for by its own absent stamp instead (one stat).
  const fs::path cwd = fs::current_path(ec);
  // The absent paths of a scan are many (a toolkit's: over a thousand) in few folders: each
  // folder's nearest existing one is looked for once, by the text before the path's last '/'
  // (its parent_path() is a function of that text), which costs less to compare than a path.
  // An absent path can also be an entry that is no regular file: a symbolic link to nothing (or
  // in a loop) is found once its target appears, which changes no stamp of the link's folder.
  // Such an entry, in a folder that exists, is vouched for by its own stamp too.
  struct Nearest {
    bool cwd = false;    ///< the nearest existing folder is `cwd`
    bool parent = false; ///< it is the path's own folder
  };
  std::map<std::string, Nearest, std::less<>> nearest; // by that text
  for (const std::string& path : deps.absent) {
    const std::string_view text = std::string_view(path).substr(0, path.rfind('/') + 1);
    auto at = nearest.find(text);
    if (at == nearest.end()) {
      const fs::path parent = fs::path(path).parent_path();
      fs::path dir = parent;
      while (dir.has_relative_path() && !fs::is_directory(dir, ec))
        dir = dir.parent_path();
      const Nearest found{!cwd.empty() && dir == cwd, dir == parent};
      if (!found.cwd)
        dirs.insert(dir.empty() ? "." : dir.string());
      at = nearest.emplace(std::string(text), found).first;
    }
    struct stat st {};
    if (at->second.cwd || (at->second.parent && ::lstat(path.c_str(), &st) == 0))
      out.push_back(detail::stamp_of(path));
  }
  for (const std::string& dir : dirs)
    out.push_back(detail::stamp_of(dir));
  return out;
}

// What a key takes from files (add_source_fields): the header fields in the order they are
// added, each content held by its owner, and the files they were read from and looked for.
struct FileFields {
  struct Header {
    std::string name;
    std::shared_ptr<const std::string> content;
    std::string path;
  };
  std::vector<Header> headers;
  Dependencies deps;
  /// The headers in their stored form, made once (finish()) for every key the scan serves.
  std::shared_ptr<const HeaderSet> stored;

  void add(std::string name, std::shared_ptr<const std::string> content, std::string path) {
    headers.push_back({std::move(name), std::move(content), std::move(path)});
  }

  void finish() { stored = set(false); }

  /// The headers as a set: their stored forms, or (`contents`, what a request record needs)
  /// their contents, which make the same key.
  std::shared_ptr<const HeaderSet> set(bool contents) const {
    std::vector<KeyField> fields;
    fields.reserve(headers.size());
    for (const Header& h : headers)
      fields.push_back(
          {KeySection::header, h.name, contents ? *h.content : stored_value(*h.content), h.path});
    return std::make_shared<const HeaderSet>(std::move(fields));
  }
};

// Every regular file directly in `dirs`: what an #include MACRO or a -D file could name.
void add_candidates(FileFields& out, const std::string& why, const std::vector<fs::path>& dirs) {
  Dependencies& deps = out.deps;
  std::set<fs::path> seen;
  for (const fs::path& dir : dirs) {
    deps.listed.push_back(dir.string());
    std::error_code ec;
    std::set<fs::path> files; // sorted: directory order is not stable
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec))
        files.insert(it->path());
    for (const fs::path& file : files)
      if (seen.insert(fs::weakly_canonical(file, ec)).second) {
        const std::string name = why + ": " + file.filename().string();
        if (FileStamp large = stamp_of(file.string()); large.size > k_largest_candidate) {
          out.add(name,
                  std::make_shared<const std::string>("not read: " + std::to_string(large.size) +
                                                      " bytes, modified " +
                                                      std::to_string(large.mtime_ns)),
                  file.string());
          deps.read.push_back(std::move(large));
          continue;
        }
        detail::FileStamp stamp;
        if (auto content = read_header(file.string(), stamp)) {
          out.add(name, std::move(content), file.string());
          deps.read.push_back(std::move(stamp));
        }
      }
  }
}

// The file fields of the scans this process made, by what decides them (the source's include
// directives, the folders searched, the headers in memory, the -D files): a process compiles
// many kernels with the same includes (every CuPy kernel pulls in the same thousand headers from
// six folders), and walking them again was half of an NVRTC front-end's cost on a miss. A scan
// is taken from here while its guards (guards_of: every file read, every folder listed, the
// nearest folder of every path looked for) hold: the test a remembered manifest passes before a
// stored binary is served. Bounded: past k_known_scans scans, or k_known_bytes of their headers'
// contents (mostly shared with the headers' own cache), the scans are forgotten.
class KnownScans {
public:
  static KnownScans& instance() {
    static KnownScans* const known = new KnownScans; // never destroyed: used during exit
    return *known;
  }

  // The scan remembered for `id` whose guards hold, its dependencies vouched for by them.
  std::shared_ptr<const FileFields> find(const Digest& id) {
    std::shared_ptr<const FileFields> known;
    {
      std::lock_guard<ForkSafeMutex> lock(m_mutex);
      if (auto it = m_scans.find(id); it != m_scans.end())
        known = it->second;
    }
    if (!known || !ProvenStamps::process().hold(known->deps.vouched->guards))
      return nullptr;
    return known;
  }

  // `fields` as remembered for `id`, their dependencies vouched for by their guards, when their
  // files are old enough to vouch for them; else as they are.
  std::shared_ptr<const FileFields> remember(const Digest& id, FileFields fields) {
    const std::vector<FileStamp> stamps = guard_stamps(fields.deps);
    auto vouched = std::make_shared<Dependencies::Vouched>();
    for (const FileStamp& stamp : stamps)
      if (stamp.exists) { // too_recent() judges only stamps of files that exist
        vouched->newest.exists = true;
        vouched->newest.mtime_ns = std::max(vouched->newest.mtime_ns, stamp.mtime_ns);
        vouched->newest.ctime_ns = std::max(vouched->newest.ctime_ns, stamp.ctime_ns);
      }
    std::size_t bytes = 0; // counted per scan, although scans share most of their headers
    for (const FileFields::Header& header : fields.headers)
      bytes += header.content->size();
    if (too_recent(vouched->newest, &real_time_ns) || bytes > k_known_bytes)
      return std::make_shared<const FileFields>(std::move(fields));
    vouched->guards = encode_stamps(stamps);
    fields.deps.vouched = std::move(vouched);
    auto known = std::make_shared<const Known>(Known{std::move(fields), bytes});
    std::lock_guard<ForkSafeMutex> lock(m_mutex);
    if (m_scans.size() >= k_known_scans || m_bytes + bytes > k_known_bytes) {
      m_scans.clear();
      m_bytes = 0;
    }
    auto& slot = m_scans[id];
    m_bytes += bytes - (slot ? slot->bytes : 0);
    slot = known;
    return known;
  }

private:
  static constexpr std::size_t k_known_scans = 256;
  static constexpr std::size_t k_known_bytes = std::size_t(256) << 20;
  struct Known : FileFields {
    std::size_t bytes; ///< of the headers' contents
  };
  ForkSafeMutex m_mutex;
  std::unordered_map<Digest, std::shared_ptr<const Known>> m_scans;
  std::size_t m_bytes = 0;
};

[[maybe_unused]] const bool g_dependencies_made_before_main =
    (KnownScans::instance(), true); // see ForkSafeMutex

} // namespace

void add_option_list(KeyBuilder& builder, const std::vector<std::string>& options,
                     const std::vector<IncludeFlag>& include_flags, std::vector<fs::path>& dirs) {
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    const IncludeFlag* include = nullptr;
    for (const IncludeFlag& f : include_flags)
      if (!include && option.compare(0, f.flag.size(), f.flag) == 0)
        include = &f;
    const bool separate = include && option.size() == include->flag.size();
    if (!include || (separate && i + 1 == options.size())) {
      builder.options(option);
      continue;
    }
    dirs.emplace_back(separate ? options[++i] : option.substr(include->flag.size()));
    builder.options(std::string(include->written) + "<include dir " + std::to_string(dirs.size()) +
                    ">");
  }
}

Dependencies add_source_fields(KeyBuilder& builder, const SourceInputs& in) {
  Dependencies deps;
  const std::vector<std::string> tokens = split_options(in.options);
  std::vector<fs::path> dirs;
  std::vector<std::pair<std::string, fs::path>> define_files;
  std::string normalized;
  const auto emit = [&](const std::string& token) {
    if (!normalized.empty())
      normalized += ' ';
    normalized += token;
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (t == "-I" || (t.size() > 2 && t.compare(0, 2, "-I") == 0)) {
      const std::string dir = t == "-I" ? (i + 1 < tokens.size() ? tokens[++i] : "") : t.substr(2);
      dirs.emplace_back(dir);
      emit("-I<include dir " + std::to_string(dirs.size()) + ">");
      continue;
    }
    if (t.size() > 2 && t.compare(0, 2, "-D") == 0) {
      const auto eq = t.find('=');
      if (eq != std::string::npos) {
        const std::string name = t.substr(2, eq - 2);
        const fs::path value = strip_quotes(t.substr(eq + 1));
        std::error_code ec;
        if (!value.empty() && fs::is_regular_file(value, ec)) {
          define_files.emplace_back(name, value);
          emit("-D" + name + "=<file>");
          continue;
        }
      }
    }
    emit(t);
  }
  builder.options(normalized);
  builder.source(in.source);

  // The runtime's own include directories come from the toolchain whose version is in the key:
  // they are searched, but a computed include does not pull in every file they hold.
  // A removed current directory has no path (and nothing can be found in it): it is left out.
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  const std::vector<fs::path> given_dirs = dirs;
  std::vector<fs::path> user_dirs = dirs;
  if (!cwd.empty())
    user_dirs.push_back(cwd);
  for (const fs::path& d : in.default_dirs)
    dirs.push_back(d);
  if (!cwd.empty())
    dirs.push_back(cwd);

  // What decides the file fields: the scan's inputs (the source only through its directives).
  std::string inputs = include_directives(in.source);
  for (const auto* list : {&dirs, &user_dirs}) {
    append_le<std::uint32_t>(inputs, static_cast<std::uint32_t>(list->size()));
    for (const fs::path& dir : *list)
      append_sized<std::uint32_t>(inputs, dir.native());
  }
  for (const auto& [name, content] : in.in_memory) { // by the form the key hashes them in
    append_sized<std::uint32_t>(inputs, name);
    append_sized<std::uint32_t>(inputs, stored_value(content));
  }
  for (const auto& [name, path] : define_files) {
    append_sized<std::uint32_t>(inputs, name);
    append_sized<std::uint32_t>(inputs, path.native());
  }
  const Digest id = Digest::of(inputs);
  std::shared_ptr<const FileFields> files = KnownScans::instance().find(id);
  if (!files) {
    FileFields made;
    IncludeScan scan = scan_includes(in.source, dirs, in.in_memory);
    for (IncludedHeader& h : scan.headers) {
      made.add(h.name, std::move(h.owner), h.path);
      if (h.stamp.exists)
        made.deps.read.push_back(std::move(h.stamp));
    }
    made.deps.absent = std::move(scan.absent);
    for (const auto& [name, path] : define_files) {
      detail::FileStamp stamp;
      auto content = detail::read_stamped(path.string(), stamp);
      made.add("-D" + name, std::make_shared<const std::string>(content.value_or("")),
               path.string());
      made.deps.read.push_back(std::move(stamp)); // not read: an absent stamp, checked all the same
    }
    if (!scan.computed.empty()) {
      // What a computed include could name: a file directly in an include directory, or in the
      // folder of the file that holds it, where a quoted include is searched first (the
      // source's: the current folder). A header's computed include (Thrust's system headers)
      // is never searched for in the current folder, whose files (a program's output) would
      // otherwise be keyed with every kernel that includes it, and change its key.
      std::string macros;
      std::vector<fs::path> folders = given_dirs;
      for (const ComputedInclude& c : scan.computed) {
        macros += (macros.empty() ? "" : ", ") + c.macro;
        const fs::path& folder = c.in_memory ? cwd : c.folder;
        if (!folder.empty() && std::find(folders.begin(), folders.end(), folder) == folders.end())
          folders.push_back(folder);
      }
      add_candidates(made, "#include " + macros, folders);
    }
    made.finish();
    files = KnownScans::instance().remember(id, std::move(made));
  }
  builder.headers(in.contents ? files->set(true) : files->stored);
  if (!files->deps.vouched) // not remembered (too recent): the only key that uses its lists
    return files->deps;
  Dependencies shared;
  shared.scan = std::shared_ptr<const Dependencies>(files, &files->deps);
  return shared;
}

std::optional<std::string> guards_of(const Dependencies& of, detail::StampClock clock) {
  const Dependencies& deps = of.files();
  if (deps.vouched)
    return too_recent(deps.vouched->newest, clock) ? std::nullopt
                                                   : std::optional(deps.vouched->guards);
  std::vector<detail::FileStamp> out = guard_stamps(deps);
  for (const detail::FileStamp& stamp : out)
    if (detail::too_recent(stamp, clock))
      return std::nullopt;
  return detail::encode_stamps(out);
}

void add_compile_environment(KeyBuilder& builder, const Config& config, std::string_view backend) {
  for (const auto& [name, value] : config.compile_environment(backend))
    builder.toolchain("env " + name, value);
}

} // namespace jitcache::detail
