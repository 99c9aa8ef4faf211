#include "core/config/config_file.hpp"
#include "core/config/config_table.hpp"

#include <jitcache/version.hpp>

#include "core/support/log.hpp"
#include "core/support/regular_file.hpp"
#include "core/tiers/remote/redis_url.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

extern char** environ;

#ifndef JITCACHE_DEFAULT_DIR
#define JITCACHE_DEFAULT_DIR "<xdg>"
#endif
#ifndef JITCACHE_DEFAULT_SYSTEM_PATH
#define JITCACHE_DEFAULT_SYSTEM_PATH ""
#endif

namespace jitcache {

using detail::EnvRole;
using detail::EnvTable;
using detail::EnvVariable;
using detail::hide_passwords;
using detail::parse_redis_urls;
using detail::RedisUrl;
using detail::shown_value;

namespace {

// The OpenCL layer's switch, which jitcache's own processes are started with turned off.
constexpr const char* k_opencl_layer_variable = "JITCACHE_OPENCL_LAYER";

using Complaints = std::vector<std::string>;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::optional<bool> parse_bool(std::string_view text) {
  const std::string t = lower(text);
  if (t == "1" || t == "true" || t == "yes" || t == "on")
    return true;
  if (t == "0" || t == "false" || t == "no" || t == "off")
    return false;
  return std::nullopt;
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in{std::string(text)};
  while (std::getline(in, part, sep))
    if (!part.empty())
      parts.push_back(part);
  return parts;
}

bool known_backend(const std::string& name) {
  const auto is = [&](const char* b) { return name == b; };
  return std::any_of(std::begin(k_backends), std::end(k_backends), is) ||
         std::any_of(std::begin(k_front_ends), std::end(k_front_ends), is);
}

std::filesystem::path versioned(const std::filesystem::path& base) {
  return base / ("v" + std::to_string(k_format_version));
}

// The settings' parsers: each sets the Config field it is named after, or complains and leaves
// the default.

void set_cache_dir(const std::string& value, Config& config, Complaints&) {
  config.cache_dir = versioned(std::filesystem::absolute(value));
}

void set_disable(const std::string& value, Config& config, Complaints& complaints) {
  if (auto flag = parse_bool(value)) {
    config.disable_all = *flag;
    config.disable_explicitly_off = !*flag;
    return;
  }
  // A list: its good part is kept.
  for (const std::string& name : split(value, ',')) {
    const std::string backend = lower(name);
    if (known_backend(backend))
      config.disabled_backends.insert(backend);
    else
      complaints.push_back("unknown backend '" + name +
                           "' (expected 1, 0 or a list of opencl,cuda,hip,nvrtc,hiprtc); ignored");
  }
}

void set_read_only(const std::string& value, Config& config, Complaints& complaints) {
  if (auto flag = parse_bool(value))
    config.read_only = *flag;
  else
    complaints.push_back("not a boolean (1/0/true/false); using read-write");
}

void set_opencl_layer(const std::string& value, Config& config, Complaints& complaints) {
  if (auto flag = parse_bool(value))
    config.opencl_layer = *flag;
  else
    complaints.push_back("not a boolean (1/0/true/false); using on");
}

void set_max_size(const std::string& value, Config& config, Complaints& complaints) {
  auto size = parse_size(value);
  if (size && *size > 0)
    config.max_size = size;
  else if (!size) // 0 is "no limit" (as ccache's max_size = 0), said in the table: no complaint
    complaints.push_back("not a size such as 10G or 512M (0: no limit); using no limit");
}

void set_max_compiles(const std::string& value, Config& config, Complaints& complaints) {
  unsigned count = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), count);
  if (ec == std::errc() && end == value.data() + value.size() && count > 0 && count <= 4096)
    config.max_compiles = count;
  else
    complaints.push_back("expected a number of compiles from 1 to 4096; using the number of cores");
}

void set_system_path(const std::string& value, Config& config, Complaints&) {
  for (const std::string& part : split(value, ':'))
    config.system_path.emplace_back(part);
}

void set_remote(const std::string& value, Config& config, Complaints& complaints) {
  std::string kept;
  for (const RedisUrl& url : parse_redis_urls(value, complaints))
    kept += (kept.empty() ? "" : ",") + url.text;
  config.remote = kept;
}

void set_remote_key(const std::string& value, Config& config, Complaints&) {
  config.remote_key = value;
  config.remote_key_source = "JITCACHE_REMOTE_KEY";
}

// What a key that was asked for and cannot be used does: the remote tiers are not read trusting
// the server instead (settle_remote_key).
constexpr char k_remote_off[] = "the remote tiers are off (a key that was asked for and cannot "
                                "be used is never replaced by reading unsigned entries)";

// A key file is a secret: refused unless only its owner, this user, can read or change it.
void set_remote_key_file(const std::string& value, Config& config, Complaints& complaints) {
  if (!config.remote_key.empty()) {
    complaints.push_back("JITCACHE_REMOTE_KEY is set too; using JITCACHE_REMOTE_KEY");
    return;
  }
  struct stat st {};
  auto key = detail::read_regular_file(value, 64 * 1024, &st);
  if (!key) {
    complaints.push_back(key.error().message + "; " + k_remote_off);
    return;
  }
  if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    complaints.push_back("the key file must belong to this user and have mode 0600 (it has uid " +
                         std::to_string(st.st_uid) + ", mode " + mode + "); " + k_remote_off);
    return;
  }
  while (!key->empty() && (key->back() == '\n' || key->back() == '\r'))
    key->pop_back();
  if (key->empty()) {
    complaints.push_back(std::string("the key file is empty; ") + k_remote_off);
    return;
  }
  config.remote_key = std::move(*key);
  config.remote_key_source = "JITCACHE_REMOTE_KEY_FILE=" + value;
}

// Which remote tiers are used, once every variable is read. A key that was asked for (either
// variable set, even to an empty value) and gave none: no remote tier, rather than one read
// trusting the server. No key asked for: only the URLs that say unsigned=1 (an unsigned shared
// cache lets whoever can write to it run code on every GPU that reads it).
// `refused_key`: where a configuration file asked for a key it may not give (file:line), empty
// when none did; that too is a key asked for.
void settle_remote_key(Config& config, const std::string& refused_key) {
  if (config.remote.empty() || !config.remote_key.empty())
    return;
  const auto variable = [&](const char* name) -> const std::string* {
    auto it = config.variables.find(name);
    return it == config.variables.end() ? nullptr : &it->second;
  };
  const std::string* key = variable("JITCACHE_REMOTE_KEY");
  const std::string* file = variable("JITCACHE_REMOTE_KEY_FILE");
  if (!key && !file && !refused_key.empty()) {
    config.warnings.push_back(refused_key + ": asks for a remote key that cannot be used; " +
                              k_remote_off);
    config.remote.clear();
    return;
  }
  if (key || file) {
    const char* name = key ? "JITCACHE_REMOTE_KEY" : "JITCACHE_REMOTE_KEY_FILE";
    const std::string why = std::string(name) + " is set and gives no key; " + k_remote_off;
    // A key file that was refused was warned about already, with its reason.
    if ((!key || key->empty()) && (!file || file->empty()))
      config.warnings.push_back(std::string(name) + "=" + shown_value(name, "") + ": " + why);
    config.remote.clear();
    return;
  }
  std::vector<std::string> complaints; // config.remote holds only URLs that parsed
  std::string kept;
  for (const RedisUrl& url : parse_redis_urls(config.remote, complaints)) {
    if (url.allow_unsigned)
      kept += (kept.empty() ? "" : ",") + url.text;
    else
      config.warnings.push_back(
          "JITCACHE_REMOTE=" + hide_passwords(url.text) +
          ": not used: there is no JITCACHE_REMOTE_KEY to check its entries with (set one, or "
          "add unsigned=1 to the URL to trust whoever can write to the server)");
  }
  config.remote = kept;
}

void set_record(const std::string& value, Config& config, Complaints&) {
  config.record = std::filesystem::absolute(value);
}

void set_log_level(const std::string& value, Config& config, Complaints& complaints) {
  const std::string v = lower(value);
  if (v == "error")
    config.log_level = LogLevel::error;
  else if (v == "warn" || v == "warning")
    config.log_level = LogLevel::warn;
  else if (v == "info")
    config.log_level = LogLevel::info;
  else if (v == "debug")
    config.log_level = LogLevel::debug;
  else
    complaints.push_back("expected error, warn, info or debug; using warn");
}

void set_opencl_store(const std::string& value, Config& config, Complaints& complaints) {
  const std::string v = lower(value);
  if (v == "wait")
    config.opencl_store = StoreMode::wait;
  else if (v == "detach")
    config.opencl_store = StoreMode::detach;
  else
    complaints.push_back("expected wait or detach; using detach");
}

void set_tune(const std::string& value, Config& config, Complaints& complaints) {
  static const std::pair<const char*, TuneMode> k_modes[] = {{"off", TuneMode::off},
                                                             {"missing", TuneMode::missing},
                                                             {"all", TuneMode::all},
                                                             {"retune", TuneMode::retune},
                                                             {"clean", TuneMode::clean}};
  const std::string v = lower(value);
  for (const auto& [name, mode] : k_modes)
    if (v == name) {
      config.tune = mode;
      return;
    }
  complaints.push_back("expected off, missing, all, retune or clean; using off");
}

// JITCACHE_NVRTC, JITCACHE_HIPRTC: a false value turns that front-end off.
template <const char* FrontEnd>
void set_front_end(const std::string& value, Config& config, Complaints& complaints) {
  if (auto on = parse_bool(value); !on)
    complaints.push_back("not a boolean (1/0/true/false); the front-end stays on");
  else if (!*on)
    config.front_ends_off.insert(FrontEnd);
}
constexpr char k_nvrtc[] = "nvrtc";
constexpr char k_hiprtc[] = "hiprtc";
constexpr char k_doc_front_end[] =
    "`0` (or `false`, `no`, `off`): that front-end (`libjitcache-nvrtc.so`, "
    "`libjitcache-hiprtc.so`), while loaded, passes every call to the real library untouched";

// The documentation lines several rows share (one README row each).
constexpr char k_doc_home[] =
    "read, never changed: where the default `JITCACHE_DIR` and the runtimes' own cache "
    "directories are";
constexpr char k_doc_runtime_switch[] =
    "the user asked that runtime not to keep binaries on disk: jitcache's persistent tiers are "
    "skipped for that backend (the memory tier still works) unless `JITCACHE_DISABLE=0`; "
    "`jitcache info` says so. jitcache never changes these variables";
constexpr char k_doc_runtime_cache[] =
    "read, never changed: where and how the runtime (or binding) keeps its own cache (`jitcache "
    "info` reports it, `jitcache clear --runtime-caches` removes it)";
constexpr char k_doc_pocl_compile[] =
    "part of the OpenCL key when set: they change the code PoCL generates";
constexpr char k_doc_hip_compile[] =
    "part of the HIP key when set: newer hipRTC and comgr releases read them (hipRTC 5.2 does "
    "not), so an upgrade stays exact";

using R = EnvRole;

// Every environment variable jitcache reads: the only list of them, and the only getenv in the
// project is in Config::from_environment(). Each row: the variable, what jitcache does with it
// (for a setting, the parser that sets its Config field), the backend it concerns, a runtime
// switch's "off" value, and its line in the README's environment table (config_test checks
// that the README says the same).
constexpr EnvVariable k_env_variables[] = {
    {"JITCACHE_DIR", R::setting, set_cache_dir, nullptr, nullptr,
     "user tier location; default `$XDG_CACHE_HOME/jitcache`, else `~/.cache/jitcache`. The "
     "entry format version is part of the path (`.../v1`). Created with parents, mode 0700, "
     "unless the nearest existing parent belongs to another user (other than root): a process "
     "never creates a cache in someone else's directory. A directory that cannot be written, or "
     "that belongs to another user, is used read-only and nothing is created in it; a path that "
     "is a file, or a symbolic link as the last component, disables the tier (with a warning)"},
    {"JITCACHE_DISABLE", R::setting, set_disable, nullptr, nullptr,
     "`1`: no persistent tiers; a list (`cuda,hip`): none for those backends; `0`: keep them "
     "even when a runtime's own cache control says otherwise"},
    {"JITCACHE_READONLY", R::setting, set_read_only, nullptr, nullptr,
     "`1` (or `true`, `yes`, `on`): read every tier, write none"},
    {"JITCACHE_MAX_SIZE", R::setting, set_max_size, nullptr, nullptr,
     "size limit of the user tier (`10G`, `512M`; `0`: no limit, as for `jitcache prune "
     "--max-size`), counting the pages each entry takes; "
     "least-recently-used entries are evicted first. The data file stays within the limit plus "
     "an eighth of it, at least 256 KiB (LMDB's other pages, its free list, manifests); a file "
     "found larger is compacted once no other process has it open"},
    {"JITCACHE_MAX_COMPILES", R::setting, set_max_compiles, nullptr, nullptr,
     "how many compiles run at once on a host, across the processes that share its user tier "
     "(default: the number of cores): the others wait for a slot (lock files in the user tier's "
     "folder, freed when a holder dies), so a cold start of 64 ranks on one node queues its "
     "compiles instead of running out of memory"},
    {"JITCACHE_SYSTEM_PATH", R::setting, set_system_path, nullptr, nullptr,
     "colon-separated read-only package files or folders (a folder: its `*.jcpkg` files, in "
     "name order), searched before the user tier; default: the build's "
     "`<prefix>/share/jitcache/packages`; `:` for none"},
    {"JITCACHE_REMOTE", R::setting, set_remote, nullptr, nullptr,
     "remote tiers after the user tier, comma-separated, read in order and written to all: "
     "`redis://[user:password@]host[:port][/db][?timeout_ms=100&backoff_ms=30000&prefix=P&"
     "readonly=1&unsigned=1&max_bytes=16777216&lease_ms=10000]` (see \"Remote tier\" in "
     "`docs/OPERATIONS.md`); a bad URL is skipped with a warning"},
    {"JITCACHE_REMOTE_KEY", R::setting, set_remote_key, nullptr, nullptr,
     "the secret that signs (HMAC-SHA256) every entry written to the remote tiers; entries read "
     "that it did not sign for the key asked for are refused. Without a key only the URLs that "
     "say `unsigned=1` are used (read trusting the server, and written unsigned). Set but empty: "
     "the remote tiers are off. Never printed"},
    {"JITCACHE_REMOTE_KEY_FILE", R::setting, set_remote_key_file, nullptr, nullptr,
     "a file holding that secret (a trailing newline is dropped); refused, with a warning, "
     "unless it is a regular file of this user with mode 0600 (or stricter). A key that is asked "
     "for and cannot be used (a refused, missing or empty file) turns the remote tiers off"},
    {"JITCACHE_RECORD", R::setting, set_record, nullptr, nullptr,
     "append every distinct request of each process (its source, options and every header by "
     "content, the target or device identity, the key) to this JSON-lines file, once per key, for "
     "`jitcache warm` to compile again, here or elsewhere, for other targets, and each tuning "
     "problem met (family, problem, device, candidates) for `jitcache tune`. A line holds what "
     "changes the build and nothing else: of the environment, only the variables that are part "
     "of the key; never jitcache's settings (no remote URL, password or key, no location). A "
     "`-D NAME=PATH` naming a file puts that file's content in the key, and so in the record. "
     "Safe from many processes at once; a file that cannot be written (or is a FIFO, a device or "
     "a link) is one warning and never fails or blocks a build"},
    {"JITCACHE_LOG", R::setting, set_log_level, nullptr, nullptr,
     "`error`, `warn` (default), `info`, `debug`"},
    {"JITCACHE_OPENCL_STORE", R::setting, set_opencl_store, nullptr, nullptr,
     "when a program built from source on PoCL is stored (reading its binary compiles every "
     "kernel in it): `detach` (default): at `Cache::flush()` or exit, by a detached "
     "idle-priority `jitcache store` process over PoCL's warm cache, not waited for; `wait`: in "
     "the process, `flush()` and exit wait. Other OpenCL runtimes always store in the process"},
    {k_opencl_layer_variable, R::setting, set_opencl_layer, nullptr, nullptr,
     "`0` (or `false`, `no`, `off`): the OpenCL loader layer (`OPENCL_LAYERS=.../"
     "libjitcache-opencl-layer.so`) stays loaded but passes every call to the runtime untouched; "
     "jitcache's own processes (`jitcache store`) always run with it off"},
    {"JITCACHE_TUNE", R::setting, set_tune, nullptr, nullptr,
     "the tuning database (`jitcache/tuning.hpp`): `off` (default): use the records and the "
     "heuristic, never tune; `missing`: tune each problem no record has, once; `all`: tune every "
     "problem the user tier has no record of, ignoring the heuristic; `retune`: tune again and "
     "replace the records; `clean`: drop the records of the problems met"},
    {"JITCACHE_NVRTC", R::setting, set_front_end<k_nvrtc>, nullptr, nullptr, k_doc_front_end},
    {"JITCACHE_HIPRTC", R::setting, set_front_end<k_hiprtc>, nullptr, nullptr, k_doc_front_end},

    {"JITCACHE_CONFIG_FILE", R::location, nullptr, nullptr, nullptr,
     "the configuration file, read once per process: default "
     "`$XDG_CONFIG_HOME/jitcache/jitcache.conf`, else `~/.config/jitcache/jitcache.conf`; set "
     "but empty: none. Its `key = value` lines are this table's settings in lower case without "
     "`JITCACHE_` (`max_size = 5G`), read and checked as these variables are; a variable set "
     "here, even empty, wins over the file. `jitcache config` lists, sets and unsets them"},
    {"XDG_CACHE_HOME", R::location, nullptr, nullptr, nullptr, k_doc_home},
    {"XDG_CONFIG_HOME", R::location, nullptr, nullptr, nullptr,
     "read, never changed: where the default configuration file is (an absolute path only, as "
     "the XDG specification says)"},
    {"HOME", R::location, nullptr, nullptr, nullptr, k_doc_home},
    {"LD_LIBRARY_PATH", R::location, nullptr, nullptr, nullptr,
     "read, never changed: part of what decides which NVRTC is opened, so NVRTC's remembered "
     "identity is kept per value"},

    {"POCL_KERNEL_CACHE", R::runtime_switch, nullptr, "opencl", "0", k_doc_runtime_switch},
    {"CUDA_CACHE_DISABLE", R::runtime_switch, nullptr, "cuda", "1", k_doc_runtime_switch},
    {"AMD_COMGR_CACHE", R::runtime_switch, nullptr, "hip", "0", k_doc_runtime_switch},

    {"POCL_CACHE_DIR", R::runtime_cache, nullptr, nullptr, nullptr, k_doc_runtime_cache},
    {"CUDA_CACHE_PATH", R::runtime_cache, nullptr, nullptr, nullptr, k_doc_runtime_cache},
    {"CUDA_CACHE_MAXSIZE", R::runtime_cache, nullptr, nullptr, nullptr, k_doc_runtime_cache},
    {"AMD_COMGR_CACHE_DIR", R::runtime_cache, nullptr, nullptr, nullptr, k_doc_runtime_cache},
    {"AMD_COMGR_CACHE_POLICY", R::runtime_cache, nullptr, nullptr, nullptr, k_doc_runtime_cache},
    {"CUPY_CACHE_DIR", R::runtime_cache, nullptr, nullptr, nullptr, k_doc_runtime_cache},

    // In the order they enter a key: reordering two changes the keys that have both.
    {"POCL_EXTRA_BUILD_FLAGS", R::compile, nullptr, "opencl", nullptr, k_doc_pocl_compile},
    {"POCL_WORK_GROUP_METHOD", R::compile, nullptr, "opencl", nullptr, k_doc_pocl_compile},
    {"POCL_WORK_GROUP_SPECIALIZATION", R::compile, nullptr, "opencl", nullptr, k_doc_pocl_compile},
    {"POCL_FORCE_PARALLEL_OUTER_LOOP", R::compile, nullptr, "opencl", nullptr, k_doc_pocl_compile},
    {"POCL_FULL_REPLICATION_THRESHOLD", R::compile, nullptr, "opencl", nullptr, k_doc_pocl_compile},
    {"POCL_WILOOPS_MAX_UNROLL_COUNT", R::compile, nullptr, "opencl", nullptr, k_doc_pocl_compile},
    {"POCL_LLVM_CPU_NAME", R::compile, nullptr, "opencl", nullptr, k_doc_pocl_compile},
    {"POCL_KERNELLIB_NAME", R::compile, nullptr, "opencl", nullptr, k_doc_pocl_compile},
    {"POCL_BINARY_SPECIALIZE_WG", R::compile, nullptr, "opencl", nullptr, k_doc_pocl_compile},
    {"POCL_MAX_WORK_GROUP_SIZE", R::compile, nullptr, "opencl", nullptr, k_doc_pocl_compile},
    {"HIPRTC_COMPILE_OPTIONS_APPEND", R::compile, nullptr, "hip", nullptr, k_doc_hip_compile},
    {"AMD_COMGR_DRIVER_OPTIONS_APPEND", R::compile, nullptr, "hip", nullptr, k_doc_hip_compile},
};

// Where the user tier is when JITCACHE_DIR is not set: the build's default, else the XDG
// location. Empty: no persistent cache.
std::filesystem::path default_cache_dir(const std::map<std::string, std::string>& variables) {
  const std::string build_default = JITCACHE_DEFAULT_DIR;
  if (build_default.empty())
    return {};
  if (build_default != "<xdg>")
    return versioned(build_default);
  const auto set = [&](const char* name) -> const std::string* {
    auto it = variables.find(name);
    return it == variables.end() || it->second.empty() ? nullptr : &it->second;
  };
  if (const std::string* xdg = set("XDG_CACHE_HOME"))
    return versioned(std::filesystem::path(*xdg) / "jitcache");
  if (const std::string* home = set("HOME"))
    return versioned(std::filesystem::path(*home) / ".cache" / "jitcache");
  return {};
}

} // namespace

std::string detail::shown_value(std::string_view name, const std::string& value) {
  if (name == "JITCACHE_REMOTE_KEY")
    return "(secret, " + std::to_string(value.size()) + " bytes)";
  if (name == "JITCACHE_REMOTE")
    return hide_passwords(value);
  return value;
}

detail::EnvTable detail::env_table() {
  return {std::begin(k_env_variables), std::size(k_env_variables)};
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::string t = lower(text);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back())))
    t.pop_back();
  for (const char* suffix : {"ib", "b"}) {
    const std::size_t n = std::char_traits<char>::length(suffix);
    if (t.size() > n && t.compare(t.size() - n, n, suffix) == 0) {
      t.resize(t.size() - n);
      break;
    }
  }
  double scale = 1;
  if (!t.empty()) {
    switch (t.back()) {
    case 'k':
      scale = 1024.0;
      break;
    case 'm':
      scale = 1024.0 * 1024;
      break;
    case 'g':
      scale = 1024.0 * 1024 * 1024;
      break;
    case 't':
      scale = 1024.0 * 1024 * 1024 * 1024;
      break;
    default:
      break;
    }
    if (scale != 1)
      t.pop_back();
  }
  if (t.empty() ||
      !std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(c) || c == '.'; }) ||
      std::count(t.begin(), t.end(), '.') > 1 || t == ".")
    return std::nullopt;
  const double value = std::strtod(t.c_str(), nullptr) * scale;
  if (!std::isfinite(value) || value >= 18446744073709551615.0)
    return std::nullopt;
  return static_cast<std::uint64_t>(value);
}

std::string format_size(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return buf;
}

PersistencePolicy Config::persistence(std::string_view backend) const {
  const auto var = [&](const char* name) -> std::string {
    auto it = variables.find(name);
    return it == variables.end() ? std::string() : it->second;
  };
  if (cache_dir.empty())
    return {false, "no cache directory (JITCACHE_DIR, XDG_CACHE_HOME and HOME unset)"};
  if (disable_all || disabled_backends.count(std::string(backend)))
    return {false, "JITCACHE_DISABLE=" + var("JITCACHE_DISABLE")};
  // A runtime's own "do not keep binaries on disk" switch is honoured unless the user
  // explicitly asked jitcache to keep its tiers (JITCACHE_DISABLE=0).
  for (const EnvVariable& v : k_env_variables) {
    if (v.role != EnvRole::runtime_switch || backend != v.backend)
      continue;
    const std::string value = var(v.name);
    if (value != v.off)
      continue;
    const std::string setting = std::string(v.name) + "=" + value;
    if (disable_explicitly_off)
      return {true, setting + " overridden by JITCACHE_DISABLE=0"};
    return {false,
            setting +
                " (the runtime's own cache is off; set JITCACHE_DISABLE=0 to keep jitcache's)"};
  }
  return {true, read_only ? "on, read-only (JITCACHE_READONLY)" : "on"};
}

namespace detail {

bool persistence_noticed(const Config& config, std::string_view backend) {
  const PersistencePolicy policy = config.persistence(backend);
  // Off for a reason the user gave jitcache itself (or no cache folder): nothing to say here.
  if (policy.enabled || config.cache_dir.empty() || config.disable_all ||
      config.disabled_backends.count(std::string(backend)))
    return policy.enabled;
  for (const EnvVariable& v : k_env_variables) {
    if (v.role != EnvRole::runtime_switch || backend != v.backend)
      continue;
    auto it = config.variables.find(v.name);
    if (it == config.variables.end() || it->second != v.off)
      continue;
    // Warn, not info: the user set a runtime's variable, perhaps long ago or for another tool,
    // and would otherwise see only misses.
    const std::string shown = backend == "opencl" ? "OpenCL"
                              : backend == "cuda" ? "CUDA"
                              : backend == "hip"  ? "HIP"
                                                  : std::string(backend);
    log::write_once(LogLevel::warn, std::string("runtime cache switch ") + v.name,
                    "jitcache's " + shown + " cache is off: " + v.name + "=" + it->second +
                        " turns the runtime's own kernel cache off and jitcache follows it (each "
                        "process compiles again; only the memory tier is used). Unset " +
                        v.name + ", or set JITCACHE_DISABLE=0 to keep jitcache's cache");
    break;
  }
  return false;
}

} // namespace detail

std::vector<std::pair<std::string, std::string>>
Config::compile_environment(std::string_view backend) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const EnvVariable& v : k_env_variables)
    if (v.role == EnvRole::compile && backend == v.backend)
      if (auto it = variables.find(v.name); it != variables.end())
        out.emplace_back(v.name, it->second);
  return out;
}

namespace {

// The Config of `vars`. `labels`: for each variable a configuration file gave, how a complaint
// names it ("FILE:LINE: key = value"); `refused_key`: see settle_remote_key.
Config build(const std::map<std::string, std::string>& vars,
             const std::map<std::string, std::string>& labels, const std::string& refused_key) {
  Config config;
  std::string name; // one buffer for the lookups: most names are too long for a string's own
  for (const EnvVariable& v : k_env_variables) {
    auto it = vars.find(name.assign(v.name));
    if (it == vars.end())
      continue;
    const std::string& value = it->second;
    config.variables.emplace(v.name, value);
    if (!v.parse || value.empty()) // empty is the same as unset
      continue;
    Complaints complaints;
    v.parse(value, config, complaints);
    const auto label = labels.find(v.name);
    for (const std::string& why : complaints)
      config.warnings.push_back((label != labels.end()
                                     ? label->second
                                     : std::string(v.name) + "=" + shown_value(v.name, value)) +
                                ": " + why);
  }
  settle_remote_key(config, refused_key);
  if (config.cache_dir.empty())
    config.cache_dir = default_cache_dir(config.variables);
  const auto system_path = config.variables.find("JITCACHE_SYSTEM_PATH");
  const std::string default_system_path = JITCACHE_DEFAULT_SYSTEM_PATH;
  if ((system_path == config.variables.end() || system_path->second.empty()) &&
      !default_system_path.empty()) {
    config.system_path = {default_system_path};
    config.system_path_default = true;
  }
  return config;
}

} // namespace

Config Config::from_variables(const std::map<std::string, std::string>& vars) {
  return build(vars, {}, {});
}

Config detail::config_from(const std::map<std::string, std::string>& environment,
                           const ConfigFileContents& file) {
  std::map<std::string, std::string> vars = environment;
  std::map<std::string, std::string> labels;
  for (const auto& [name, setting] : file.settings)
    if (vars.emplace(name, setting.value).second) // the environment wins, even empty
      labels.emplace(name, file.path.string() + ":" + std::to_string(setting.line) + ": " +
                               file_key(name) + " = " + shown_value(name, setting.value));
  const std::string refused_key =
      file.refused_key_line ? file.path.string() + ":" + std::to_string(file.refused_key_line)
                            : std::string();
  Config config = build(vars, labels, refused_key);
  // A config made again from these variables (the Python module's, a child process's
  // environment) keeps the remote tiers off too: a key file set empty is a key asked for.
  if (!refused_key.empty() && !vars.count("JITCACHE_REMOTE_KEY"))
    config.variables.emplace("JITCACHE_REMOTE_KEY_FILE", "");
  config.warnings.insert(config.warnings.begin(), file.warnings.begin(), file.warnings.end());
  return config;
}

std::map<std::string, std::string> detail::environment_variables() {
  std::map<std::string, std::string> vars;
  for (const EnvVariable& v : k_env_variables)
    if (const char* value = std::getenv(v.name))
      vars.emplace(v.name, value);
  return vars;
}

Config Config::from_environment() {
  const std::map<std::string, std::string> vars = detail::environment_variables();
  Config config = detail::config_from(
      vars, detail::read_config_file_once(detail::config_file_location(vars).path));
  log::set_level(config.log_level);
  for (const std::string& warning : config.warnings)
    log::write_once(LogLevel::warn, "config:" + warning, warning);
  return config;
}

std::vector<std::string>
detail::child_environment(const std::map<std::string, std::string>& variables) {
  std::set<std::string> replaced;
  for (const EnvVariable& v : k_env_variables)
    if (v.role == EnvRole::setting || v.role == EnvRole::compile || variables.count(v.name))
      replaced.insert(v.name);
  std::vector<std::string> out;
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view text(*entry);
    if (!replaced.count(std::string(text.substr(0, text.find('=')))))
      out.emplace_back(text);
  }
  for (const auto& [name, value] : variables)
    if (name != k_opencl_layer_variable)
      out.push_back(name + "=" + value);
  // A jitcache process acting for another never serves through the OpenCL layer it may inherit
  // (OPENCL_LAYERS): its own cache would open the same user tier a second time in one process.
  out.push_back(std::string(k_opencl_layer_variable) + "=0");
  return out;
}

std::vector<std::string> Config::known_variables() {
  std::vector<std::string> names;
  for (const EnvVariable& v : k_env_variables)
    names.emplace_back(v.name);
  return names;
}

} // namespace jitcache
