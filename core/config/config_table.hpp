#pragma once

#include <jitcache/config.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::detail {

/// What jitcache does with an environment variable.
enum class EnvRole {
  setting,        ///< one of jitcache's own: parsed into Config (EnvVariable::parse)
  location,       ///< where a default location or a runtime library comes from: recorded only
  runtime_switch, ///< a runtime's own "keep binaries on disk" control: honoured by persistence()
  runtime_cache,  ///< where or how a runtime keeps its own cache: reported, never changed
  compile,        ///< changes the code a backend's compiler generates: part of its key when set
};

/// Reads a setting's non-empty value into `config`. A bad value leaves `config` as it was and
/// adds one complaint (what was wrong and what is used instead) per thing that was wrong.
using EnvParse = void (*)(const std::string& value, Config& config,
                          std::vector<std::string>& complaints);

/// One row of the environment table: a variable, what jitcache does with it, and its line in
/// the README's environment table.
struct EnvVariable {
  const char* name;
  EnvRole role;
  EnvParse parse;      ///< setting: what it sets in Config and how; null otherwise
  const char* backend; ///< runtime_switch, compile: the backend it concerns
  const char* off;     ///< runtime_switch: the value that turns that runtime's cache off
  const char* doc;     ///< the README's description, word for word
};

/// The table, in the order its rows are read (compile rows: in the order they enter the key).
/// C++17 has no std::span.
struct EnvTable {
  const EnvVariable* rows;
  std::size_t size;
  const EnvVariable* begin() const { return rows; }
  const EnvVariable* end() const { return rows + size; }
};

/// `value` of variable `name` as it may be shown (warnings, `jitcache info`): secrets hidden
/// (JITCACHE_REMOTE_KEY entirely, the passwords in JITCACHE_REMOTE's URLs).
std::string shown_value(std::string_view name, const std::string& value);

/// Every environment variable jitcache reads (core/config/config.cpp); Config::from_variables reads
/// them all. Static storage: valid for the life of the process.
EnvTable env_table();

/// The environment ("NAME=VALUE" each) of a jitcache process this one starts to act for a
/// Config whose variables are `variables`: this process's environment, with `variables` in
/// place of every jitcache setting and compile variable (those `variables` lacks are left
/// out). A runtime's location or cache variable `variables` does not name is this process's,
/// as the runtime saw it. The settings that are secrets (the remote tier's password and key)
/// travel this way, readable by this user only, never in a file.
std::vector<std::string> child_environment(const std::map<std::string, std::string>& variables);

/// config.persistence(backend).enabled; and, the first time in this process that a runtime's own
/// cache control (POCL_KERNEL_CACHE=0, CUDA_CACHE_DISABLE=1, AMD_COMGR_CACHE=0) is what turns
/// `backend`'s persistent tiers off, one warning saying so, why and how to keep them. What asks
/// on behalf of a request calls this; `jitcache info` reads persistence() and says it there.
bool persistence_noticed(const Config& config, std::string_view backend);

} // namespace jitcache::detail
