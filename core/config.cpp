#include <jitcache/config.hpp>
#include <jitcache/version.hpp>

#include "core/log.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#ifndef JITCACHE_DEFAULT_DIR
#define JITCACHE_DEFAULT_DIR "<xdg>"
#endif

namespace jitcache {

namespace {

// Every environment variable jitcache reads: its own, and the runtimes' cache controls and
// locations (reported by `jitcache info`, never changed). This is the only table; the only
// getenv in the project is in Config::from_environment().
constexpr const char* k_variables[] = {
    "JITCACHE_DIR",       "JITCACHE_DISABLE",  "JITCACHE_READONLY", "JITCACHE_MAX_SIZE",
    "JITCACHE_SYSTEM_PATH", "JITCACHE_REMOTE", "JITCACHE_LOG",
    // Runtime and binding cache controls and locations.
    "POCL_KERNEL_CACHE",  "POCL_CACHE_DIR",    "CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH",
    "CUDA_CACHE_MAXSIZE", "AMD_COMGR_CACHE",   "AMD_COMGR_CACHE_DIR", "AMD_COMGR_CACHE_POLICY",
    "CUPY_CACHE_DIR",
    // Where default locations come from, and which runtime libraries are opened.
    "HOME",               "XDG_CACHE_HOME",    "LD_LIBRARY_PATH",
};

// Variables a backend's compiler reads that change the code it generates: part of the key.
struct CompileVariable {
  const char* backend;
  const char* name;
};
constexpr CompileVariable k_compile_variables[] = {
    {"opencl", "POCL_EXTRA_BUILD_FLAGS"},        {"opencl", "POCL_WORK_GROUP_METHOD"},
    {"opencl", "POCL_WORK_GROUP_SPECIALIZATION"}, {"opencl", "POCL_FORCE_PARALLEL_OUTER_LOOP"},
    {"opencl", "POCL_FULL_REPLICATION_THRESHOLD"}, {"opencl", "POCL_WILOOPS_MAX_UNROLL_COUNT"},
    {"opencl", "POCL_LLVM_CPU_NAME"},            {"opencl", "POCL_KERNELLIB_NAME"},
    {"opencl", "POCL_BINARY_SPECIALIZE_WG"},     {"opencl", "POCL_MAX_WORK_GROUP_SIZE"},
    // Read by newer HIP and comgr releases (not by hipRTC 5.2): kept so an upgrade stays exact.
    {"hip", "HIPRTC_COMPILE_OPTIONS_APPEND"},    {"hip", "AMD_COMGR_DRIVER_OPTIONS_APPEND"},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
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
  return std::find_if(std::begin(k_backends), std::end(k_backends),
                      [&](const char* b) { return name == b; }) != std::end(k_backends);
}

class Parser {
public:
  Parser(const std::map<std::string, std::string>& vars, Config& config)
      : m_vars(vars), m_config(config) {}

  const std::string* get(const char* name) const {
    auto it = m_vars.find(name);
    return it == m_vars.end() ? nullptr : &it->second;
  }
  void warn(const char* name, const std::string& value, const std::string& why) {
    m_config.warnings.push_back(std::string(name) + "=" + value + ": " + why);
  }

  void cache_dir() {
    std::filesystem::path base;
    if (const std::string* dir = get("JITCACHE_DIR"); dir && !dir->empty()) {
      base = std::filesystem::absolute(*dir);
    } else {
      const std::string build_default = JITCACHE_DEFAULT_DIR;
      if (build_default.empty())
        return; // built with no persistent cache
      if (build_default != "<xdg>") {
        base = build_default;
      } else if (const std::string* xdg = get("XDG_CACHE_HOME"); xdg && !xdg->empty()) {
        base = std::filesystem::path(*xdg) / "jitcache";
      } else if (const std::string* home = get("HOME"); home && !home->empty()) {
        base = std::filesystem::path(*home) / ".cache" / "jitcache";
      } else {
        return;
      }
    }
    m_config.cache_dir = base / ("v" + std::to_string(k_format_version));
  }

  void disable() {
    const std::string* value = get("JITCACHE_DISABLE");
    if (!value || value->empty())
      return;
    if (auto flag = parse_bool(*value)) {
      m_config.disable_all = *flag;
      m_config.disable_explicitly_off = !*flag;
      return;
    }
    for (const std::string& name : split(*value, ',')) {
      const std::string backend = lower(name);
      if (known_backend(backend))
        m_config.disabled_backends.insert(backend);
      else
        warn("JITCACHE_DISABLE", *value,
             "unknown backend '" + name + "' (expected 1, 0 or a list of opencl,cuda,hip); ignored");
    }
  }

  void read_only() {
    if (const std::string* value = get("JITCACHE_READONLY"); value && !value->empty()) {
      if (auto flag = parse_bool(*value))
        m_config.read_only = *flag;
      else
        warn("JITCACHE_READONLY", *value, "not a boolean (1/0/true/false); using read-write");
    }
  }

  void max_size() {
    if (const std::string* value = get("JITCACHE_MAX_SIZE"); value && !value->empty()) {
      auto size = parse_size(*value);
      if (size && *size > 0)
        m_config.max_size = size;
      else
        warn("JITCACHE_MAX_SIZE", *value, "not a positive size such as 10G or 512M; using no limit");
    }
  }

  void system_path() {
    if (const std::string* value = get("JITCACHE_SYSTEM_PATH"))
      for (const std::string& part : split(*value, ':'))
        m_config.system_path.emplace_back(part);
  }

  void remote() {
    const std::string* value = get("JITCACHE_REMOTE");
    if (!value || value->empty())
      return;
    const std::string prefix = "redis://";
    const std::string rest = value->substr(std::min(value->size(), prefix.size()));
    const auto colon = rest.rfind(':');
    bool ok = value->compare(0, prefix.size(), prefix) == 0 && !rest.empty() && rest[0] != ':';
    if (ok && colon != std::string::npos) {
      const std::string port = rest.substr(colon + 1);
      ok = !port.empty() && port.size() <= 5 &&
           std::all_of(port.begin(), port.end(), ::isdigit) && std::stoi(port) > 0 &&
           std::stoi(port) < 65536;
    }
    if (ok)
      m_config.remote = *value;
    else
      warn("JITCACHE_REMOTE", *value, "not a redis://host[:port] address; no remote tier");
  }

  void log_level() {
    const std::string* value = get("JITCACHE_LOG");
    if (!value || value->empty())
      return;
    const std::string v = lower(*value);
    if (v == "error") m_config.log_level = LogLevel::error;
    else if (v == "warn" || v == "warning") m_config.log_level = LogLevel::warn;
    else if (v == "info") m_config.log_level = LogLevel::info;
    else if (v == "debug") m_config.log_level = LogLevel::debug;
    else warn("JITCACHE_LOG", *value, "expected error, warn, info or debug; using warn");
  }

private:
  const std::map<std::string, std::string>& m_vars;
  Config& m_config;
};

} // namespace

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
    case 'k': scale = 1024.0; break;
    case 'm': scale = 1024.0 * 1024; break;
    case 'g': scale = 1024.0 * 1024 * 1024; break;
    case 't': scale = 1024.0 * 1024 * 1024 * 1024; break;
    default: break;
    }
    if (scale != 1)
      t.pop_back();
  }
  if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(c) || c == '.'; }) ||
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
  if (disable_all)
    return {false, "JITCACHE_DISABLE=" + var("JITCACHE_DISABLE")};
  if (disabled_backends.count(std::string(backend)))
    return {false, "JITCACHE_DISABLE=" + var("JITCACHE_DISABLE")};
  // A runtime's own "do not keep binaries on disk" switch is honoured unless the user
  // explicitly asked jitcache to keep its tiers (JITCACHE_DISABLE=0).
  // Each runtime's own "off" value, exactly as that runtime reads it.
  struct RuntimeSwitch {
    const char* backend;
    const char* variable;
    const char* off; // the value that turns the runtime's cache off
  };
  static constexpr RuntimeSwitch k_switches[] = {
      {"opencl", "POCL_KERNEL_CACHE", "0"},
      {"cuda", "CUDA_CACHE_DISABLE", "1"},
      {"hip", "AMD_COMGR_CACHE", "0"},
  };
  for (const RuntimeSwitch& s : k_switches) {
    if (backend != s.backend)
      continue;
    const std::string value = var(s.variable);
    if (value == s.off) {
      if (disable_explicitly_off)
        return {true, std::string(s.variable) + "=" + value + " overridden by JITCACHE_DISABLE=0"};
      return {false, std::string(s.variable) + "=" + value +
                         " (the runtime's own cache is off; set JITCACHE_DISABLE=0 to keep jitcache's)"};
    }
  }
  return {true, read_only ? "on, read-only (JITCACHE_READONLY)" : "on"};
}

std::vector<std::pair<std::string, std::string>>
Config::compile_environment(std::string_view backend) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const CompileVariable& v : k_compile_variables)
    if (auto it = variables.find(v.name); backend == v.backend && it != variables.end())
      out.emplace_back(v.name, it->second);
  return out;
}

Config Config::from_variables(const std::map<std::string, std::string>& vars) {
  Config config;
  const auto record = [&](const char* name) {
    if (auto it = vars.find(name); it != vars.end())
      config.variables.emplace(name, it->second);
  };
  for (const char* name : k_variables)
    record(name);
  for (const CompileVariable& v : k_compile_variables)
    record(v.name);
  Parser parser(config.variables, config);
  parser.cache_dir();
  parser.disable();
  parser.read_only();
  parser.max_size();
  parser.system_path();
  parser.remote();
  parser.log_level();
  return config;
}

Config Config::from_environment() {
  std::map<std::string, std::string> vars;
  for (const std::string& name : known_variables())
    if (const char* value = std::getenv(name.c_str()))
      vars.emplace(name, value);
  Config config = from_variables(vars);
  log::set_level(config.log_level);
  for (const std::string& warning : config.warnings)
    log::write_once(LogLevel::warn, "config:" + warning, warning);
  return config;
}

std::vector<std::string> Config::known_variables() {
  std::vector<std::string> names(std::begin(k_variables), std::end(k_variables));
  for (const CompileVariable& v : k_compile_variables)
    names.emplace_back(v.name);
  return names;
}

} // namespace jitcache
