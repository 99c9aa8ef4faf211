#include "tools/jitcache/commands.hpp"

#include "core/config/config_file.hpp"

#include <filesystem>

namespace jitcache::cli {

using detail::ConfigFileContents;
using detail::EnvRole;
using detail::EnvVariable;
using detail::file_key;

namespace {

// Where a setting's value comes from, and what it is.
struct Origin {
  const char* source = "default";          ///< environment, file or default
  std::string value;                       ///< raw; empty for the default
  unsigned line = 0;                       ///< file: its line
  const std::string* file_value = nullptr; ///< environment: what the file says, overridden
};

Origin origin_of(const EnvVariable& v, const std::map<std::string, std::string>& environment,
                 const ConfigFileContents& file) {
  Origin origin;
  const auto in_file = file.settings.find(v.name);
  if (in_file != file.settings.end())
    origin.file_value = &in_file->second.value;
  if (auto it = environment.find(v.name); it != environment.end()) {
    origin.source = "environment";
    origin.value = it->second;
  } else if (origin.file_value) {
    origin.source = "file";
    origin.value = in_file->second.value;
    origin.line = in_file->second.line;
    origin.file_value = nullptr;
  }
  return origin;
}

nlohmann::json describe(const EnvVariable& v, const Origin& origin,
                        const std::filesystem::path& path) {
  nlohmann::json line = {{"key", file_key(v.name)},
                         {"variable", v.name},
                         {"value", std::string(origin.source) == "default"
                                       ? nlohmann::json(nullptr)
                                       : nlohmann::json(detail::shown_value(v.name, origin.value))},
                         {"source", origin.source},
                         {"in_file", detail::file_refusal(v) == nullptr}};
  if (origin.line) {
    line["file"] = path.string();
    line["line"] = origin.line;
  }
  if (origin.file_value)
    line["file_value"] = detail::shown_value(v.name, *origin.file_value);
  return line;
}

std::string text_of(const EnvVariable& v, const Origin& origin, const std::filesystem::path& path) {
  std::string text = file_key(v.name) + " = ";
  if (std::string(origin.source) == "default")
    text += "(default)";
  else
    text += detail::shown_value(v.name, origin.value) + "  (" + origin.source;
  if (origin.line)
    text += " " + path.string() + ":" + std::to_string(origin.line);
  if (origin.file_value)
    text += "; the file's " + detail::shown_value(v.name, *origin.file_value) + " is not used";
  if (std::string(origin.source) != "default")
    text += ")";
  if (detail::file_refusal(v))
    text += "  [environment only]";
  return text;
}

// A path setting's value as the file keeps it: absolute, as the environment would have taken it
// in this working directory.
std::string absolute_value(const EnvVariable& v, const std::string& value) {
  const std::string name = v.name;
  if ((name != "JITCACHE_DIR" && name != "JITCACHE_REMOTE_KEY_FILE") || value.empty())
    return value;
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(value, error);
  return error ? value : absolute.lexically_normal().string();
}

} // namespace

int run_config(const ConfigOptions& options, const Output& out) {
  const std::map<std::string, std::string> environment = detail::environment_variables();
  const detail::ConfigFileLocation location = detail::config_file_location(environment);
  const ConfigFileContents file = detail::read_config_file_once(location.path);

  if (options.key.empty()) {
    if (options.unset || options.value)
      return usage_error("config: --unset and VALUE need a KEY");
    if (!out.json())
      out.emit({},
               "configuration file: " + (location.path.empty() ? "none (" + location.why_none + ")"
                                                               : location.path.string()));
    for (const EnvVariable& v : detail::env_table())
      if (v.role == EnvRole::setting) {
        const Origin origin = origin_of(v, environment, file);
        out.emit(describe(v, origin, location.path), text_of(v, origin, location.path));
      }
    return 0;
  }

  const EnvVariable* v = detail::find_setting(options.key);
  if (!v)
    return usage_error("config: unknown key '" + options.key +
                       "' (`jitcache config` lists them: the JITCACHE_ settings in lower case "
                       "without the prefix, such as max_size)");
  const std::string key = file_key(v->name);
  if (!options.unset && !options.value) {
    const Origin origin = origin_of(*v, environment, file);
    out.emit(describe(*v, origin, location.path), detail::shown_value(v->name, origin.value));
    return 0;
  }
  if (options.unset && options.value)
    return usage_error("config: --unset takes a KEY only");
  // Refused before anything else is looked at: the value of a secret is never written, read back
  // or printed.
  if (options.value) {
    if (const char* why = detail::file_refusal(*v))
      return usage_error("config: " + key + " is not kept in the configuration file: " + why);
  }
  std::optional<std::string> value;
  if (options.value) {
    value = absolute_value(*v, *options.value);
    const std::vector<std::string> complaints = detail::check_file_value(*v, *value);
    if (!complaints.empty())
      return usage_error("config: " + key + " " + detail::shown_value(v->name, *value) + ": " +
                         complaints.front() + "; the file is left as it is");
  }
  if (location.path.empty())
    return fail(Error(ErrorCode::io_error, "no configuration file: " + location.why_none));
  auto written = detail::write_config_setting(location.path, *v, value);
  if (!written)
    return fail(written.error());

  nlohmann::json line = {{"key", key},
                         {"variable", v->name},
                         {"value", value ? nlohmann::json(detail::shown_value(v->name, *value))
                                         : nlohmann::json(nullptr)},
                         {"file", location.path.string()}};
  std::string text =
      value ? key + " = " + detail::shown_value(v->name, *value) + " in " : key + " removed from ";
  text += location.path.string();
  if (environment.count(v->name)) {
    line["overridden_by_environment"] = true;
    text += " (" + std::string(v->name) + " is set in the environment and wins over the file)";
  }
  out.emit(line, text);
  return 0;
}

} // namespace jitcache::cli
