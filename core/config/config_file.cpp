#include "core/config/config_file.hpp"

#include "core/support/fd_write.hpp"
#include "core/support/regular_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace jitcache::detail {

namespace {

constexpr std::string_view k_prefix = "JITCACHE_";

// The settings a configuration file may not give, and why (the README says the same).
constexpr std::pair<const char*, const char*> k_not_in_file[] = {
    {"JITCACHE_REMOTE_KEY",
     "it is a secret, and tools copy, back up and print configuration files; name a "
     "mode-0600 key file with remote_key_file instead"},
    {"JITCACHE_RECORD", "a recording is one run's, not a standing setting: set JITCACHE_RECORD for "
                        "the run to record"},
    {"JITCACHE_TUNE", "a tuning mode is one run's (retune and clean act on every run that has "
                      "them): set JITCACHE_TUNE for the run to tune"},
};

// The settings whose value is a path (a list of paths: JITCACHE_SYSTEM_PATH). In a file, a
// relative one would mean a different file in each working directory, so it is refused.
constexpr const char* k_path_settings[] = {"JITCACHE_DIR", "JITCACHE_REMOTE_KEY_FILE",
                                           "JITCACHE_SYSTEM_PATH"};

constexpr char k_relative[] = "a relative path; the file takes absolute ones only";

// Whether `value` of `v` names a path that is not absolute (a part of JITCACHE_SYSTEM_PATH's
// list; the empty parts of `:`, "none", are not paths).
bool has_relative_path(const EnvVariable& v, std::string_view value) {
  if (std::none_of(std::begin(k_path_settings), std::end(k_path_settings),
                   [&](const char* name) { return std::string_view(name) == v.name; }))
    return false;
  if (std::string_view(v.name) != "JITCACHE_SYSTEM_PATH")
    return !value.empty() && value.front() != '/';
  for (std::size_t start = 0; start <= value.size();) {
    const std::size_t end = std::min(value.find(':', start), value.size());
    if (end > start && value[start] != '/')
      return true;
    start = end + 1;
  }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// What makes `line` (its newline and a CR before it removed) no text: a NUL, a control
// character other than a tab, DEL, or bytes that are not UTF-8; empty when it is text.
std::string damage_in(std::string_view line) {
  for (std::size_t i = 0; i < line.size();) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == '\t' || (c >= 0x20 && c < 0x7f)) {
      ++i;
      continue;
    }
    if (c < 0x20 || c == 0x7f)
      return "a control character (byte " + std::to_string(c) + ")";
    // A UTF-8 sequence: its length from the lead byte, the shortest form only, no surrogates,
    // nothing above U+10FFFF.
    std::size_t n = 0;
    unsigned min = 0;
    unsigned code = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      n = 2;
      min = 0x80;
      code = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 3;
      min = 0x800;
      code = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 4;
      min = 0x10000;
      code = c & 0x07;
    } else {
      return "bytes that are not UTF-8";
    }
    if (i + n > line.size())
      return "bytes that are not UTF-8";
    for (std::size_t k = 1; k < n; ++k) {
      const auto next = static_cast<unsigned char>(line[i + k]);
      if ((next & 0xc0) != 0x80)
        return "bytes that are not UTF-8";
      code = (code << 6) | (next & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
      return "bytes that are not UTF-8";
    i += n;
  }
  return {};
}

bool is_key_text(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// The key of a `key = value` line of text, or empty for a blank, comment or other line.
std::string_view key_of(std::string_view line) {
  const std::string_view text = trim(line);
  if (text.empty() || text.front() == '#')
    return {};
  const std::size_t eq = text.find('=');
  return eq == std::string_view::npos ? std::string_view() : trim(text.substr(0, eq));
}

// A complaint without what the environment falls back to ("not a size ...; using no limit"):
// a value of the file that is refused is not written, so nothing is used instead.
std::string without_fallback(const std::string& complaint) {
  const std::size_t at = complaint.rfind("; ");
  return at == std::string::npos ? complaint : complaint.substr(0, at);
}

// Collects a file's warnings, at most k_config_file_max_warnings.
class Warnings {
public:
  explicit Warnings(std::vector<std::string>& out) : m_out(out) {}
  ~Warnings() {
    if (m_left_out)
      m_out.back() += " (and " + std::to_string(m_left_out) + " more such problems)";
  }
  Warnings(const Warnings&) = delete;
  Warnings& operator=(const Warnings&) = delete;
  void add(std::string warning) {
    if (m_out.size() < k_config_file_max_warnings)
      m_out.push_back(std::move(warning));
    else
      ++m_left_out;
  }

private:
  std::vector<std::string>& m_out;
  std::size_t m_left_out = 0;
};

Error write_error(const std::filesystem::path& path, const std::string& why) {
  return Error(ErrorCode::io_error, "cannot write " + path.string() + ": " + why);
}

// Closes a descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

ConfigFileLocation config_file_location(const std::map<std::string, std::string>& environment) {
  const auto value = [&](const char* name) -> const std::string* {
    auto it = environment.find(name);
    return it == environment.end() ? nullptr : &it->second;
  };
  if (const std::string* named = value("JITCACHE_CONFIG_FILE")) {
    if (named->empty())
      return {{}, "JITCACHE_CONFIG_FILE is set empty"};
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(*named, error);
    return {error ? std::filesystem::path(*named) : absolute, {}};
  }
  // The path is made as text and parsed once: each `/` of std::filesystem::path parses the
  // path again, and this runs first in a process's first request.
  const auto under = [](const std::string& folder, const char* rest) {
    return std::filesystem::path(folder + (folder.back() == '/' ? "" : "/") + rest);
  };
  const std::string* xdg = value("XDG_CONFIG_HOME");
  if (xdg && !xdg->empty() && xdg->front() == '/')
    return {under(*xdg, "jitcache/jitcache.conf"), {}};
  const std::string* home = value("HOME");
  if (home && !home->empty())
    return {under(*home, ".config/jitcache/jitcache.conf"), {}};
  return {{}, "neither JITCACHE_CONFIG_FILE, XDG_CONFIG_HOME nor HOME is set"};
}

std::string file_key(std::string_view variable) {
  if (variable.substr(0, k_prefix.size()) == k_prefix)
    variable.remove_prefix(k_prefix.size());
  std::string key(variable);
  std::transform(key.begin(), key.end(), key.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return key;
}

const EnvVariable* find_setting(std::string_view key) {
  for (const EnvVariable& v : env_table())
    if (v.role == EnvRole::setting && (key == v.name || key == file_key(v.name)))
      return &v;
  return nullptr;
}

const char* file_refusal(const EnvVariable& v) {
  for (const auto& [name, why] : k_not_in_file)
    if (std::string_view(name) == v.name)
      return why;
  return nullptr;
}

ConfigFileContents parse_config_file(std::string_view text, const std::filesystem::path& path) {
  ConfigFileContents file;
  file.path = path;
  Warnings warnings(file.warnings);
  const std::string where = path.string() + ":";
  unsigned number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    const std::string at = where + std::to_string(number) + ": ";
    if (const std::string damage = damage_in(line); !damage.empty()) {
      warnings.add(at + "a damaged line (" + damage + "); it is ignored");
      continue;
    }
    const std::string_view content = trim(line);
    if (content.empty() || content.front() == '#')
      continue;
    const std::size_t eq = content.find('=');
    const std::string_view key = trim(content.substr(0, eq));
    if (eq == std::string_view::npos || !is_key_text(key)) {
      warnings.add(at + "not a `key = value` line; it is ignored");
      continue;
    }
    const std::string value(trim(content.substr(eq + 1)));
    const EnvVariable* v = find_setting(key);
    if (!v || key != file_key(v->name)) {
      warnings.add(at + "unknown key '" + std::string(key) +
                   "' (the keys are the JITCACHE_ settings in lower case without the prefix, "
                   "such as max_size); it is ignored");
      continue;
    }
    if (const char* why = file_refusal(*v)) {
      warnings.add(at + std::string(key) + " is not read from this file: " + why);
      if (std::string_view(v->name) == "JITCACHE_REMOTE_KEY")
        file.refused_key_line = number;
      continue;
    }
    if (has_relative_path(*v, value)) {
      warnings.add(at + std::string(key) + " = " + shown_value(v->name, value) + ": " + k_relative +
                   " (it is ignored)");
      if (std::string_view(v->name) == "JITCACHE_REMOTE_KEY_FILE")
        file.refused_key_line = number;
      continue;
    }
    file.settings[v->name] = {value, number};
  }
  return file;
}

ConfigFileContents read_config_file(const std::filesystem::path& path) {
  ConfigFileContents file;
  file.path = path;
  if (path.empty())
    return file;
  // No file, or one this user may not even look for (a folder on the way it may not search: a
  // process run with another user's HOME): nothing to use, and nothing to say, since another
  // user's file is never used anyway.
  struct stat there {};
  if (::stat(path.c_str(), &there) != 0 && (errno == ENOENT || errno == ENOTDIR || errno == EACCES))
    return file;
  struct stat st {};
  auto text = read_regular_file(path.string(), k_config_file_max_bytes, &st);
  if (!text) {
    file.warnings.push_back(text.error().message + "; no setting of it is used");
    return file;
  }
  if ((st.st_uid != ::geteuid() && st.st_uid != 0) || (st.st_mode & 022) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    file.warnings.push_back(path.string() +
                            ": not used: a configuration file must belong to this user (or "
                            "root) and be writable by its owner only (it has uid " +
                            std::to_string(st.st_uid) + ", mode " + mode + ")");
    return file;
  }
  return parse_config_file(*text, path);
}

ConfigFileContents read_config_file_once(const std::filesystem::path& path) {
  static std::mutex mutex;
  static std::optional<ConfigFileContents> read;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!read || read->path != path)
    read = read_config_file(path);
  return *read;
}

std::vector<std::string> check_file_value(const EnvVariable& v, const std::string& value) {
  if (value.empty())
    return {"an empty value (use --unset to go back to the default)"};
  if (value.find('\n') != std::string::npos || !damage_in(value).empty())
    return {"not one line of text"};
  if (value != trim(value))
    return {"begins or ends with blanks"};
  if (has_relative_path(v, value))
    return {k_relative};
  Config scratch;
  std::vector<std::string> complaints;
  if (v.parse)
    v.parse(value, scratch, complaints);
  for (std::string& complaint : complaints)
    complaint = without_fallback(complaint);
  return complaints;
}

Expected<void> write_config_setting(const std::filesystem::path& named, const EnvVariable& v,
                                    const std::optional<std::string>& value) {
  namespace fs = std::filesystem;
  std::error_code error;
  // A symbolic link (a dotfiles folder's) is written through, not replaced by a file.
  fs::path path = named;
  if (fs::is_symlink(named, error)) {
    path = fs::weakly_canonical(named, error);
    if (error)
      return write_error(named, error.message());
  }
  const fs::path folder = path.parent_path();
  if (!fs::is_directory(folder, error)) {
    fs::create_directories(folder, error);
    if (error)
      return write_error(path, "cannot create " + folder.string() + ": " + error.message());
    ::chmod(folder.c_str(), 0700);
  }
  Fd lock;
  const fs::path lock_path = folder / (path.filename().string() + ".lock");
  lock.fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  if (lock.fd < 0)
    return write_error(path, "cannot open its lock file " + lock_path.string() + ": " +
                                 std::strerror(errno));
  while (::flock(lock.fd, LOCK_EX) != 0)
    if (errno != EINTR)
      return write_error(path, std::string("cannot lock it: ") + std::strerror(errno));

  // Under the lock: the file as the last writer left it.
  std::string old;
  mode_t mode = 0600;
  struct stat there {};
  if (::lstat(path.c_str(), &there) == 0 || errno != ENOENT) {
    struct stat st {};
    auto text = read_regular_file(path.string(), k_config_file_max_bytes, &st);
    if (!text)
      return Error(ErrorCode::io_error, text.error().message + "; it is left as it is");
    old = std::move(*text);
    mode = st.st_mode & 0755;
  }

  const std::string key = file_key(v.name);
  std::string out;
  bool written = false;
  for (std::string_view rest = old; !rest.empty();) {
    const std::size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (key_of(line) != key) {
      out.append(line).push_back('\n');
      continue;
    }
    if (value && !written)
      out += key + " = " + *value + "\n";
    written = true;
  }
  if (value && !written)
    out += key + " = " + *value + "\n";

  // The temporary file, in the same folder (rename is atomic within one filesystem only). One
  // name is enough: writers hold the lock; what a killed writer left there is replaced.
  const fs::path temporary = folder / ("." + path.filename().string() + ".tmp");
  ::unlink(temporary.c_str());
  Fd file;
  file.fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (file.fd < 0)
    return write_error(path, std::strerror(errno));
  const auto give_up = [&](const std::string& why) -> Expected<void> {
    ::unlink(temporary.c_str());
    return write_error(path, why);
  };
  if (::fchmod(file.fd, mode) != 0)
    return give_up(std::strerror(errno));
  if (auto done = write_all(file.fd, out); !done)
    return give_up(done.error().message);
  if (::fsync(file.fd) != 0)
    return give_up(std::strerror(errno));
  const int closed = ::close(file.fd);
  file.fd = -1;
  if (closed != 0)
    return give_up(std::strerror(errno));
  if (::rename(temporary.c_str(), path.c_str()) != 0)
    return give_up(std::strerror(errno));
  // The rename itself survives a crash once the folder is on disk.
  Fd dir;
  dir.fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir.fd >= 0)
    ::fsync(dir.fd);
  return {};
}

} // namespace jitcache::detail
