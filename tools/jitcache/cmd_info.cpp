#include "tools/jitcache/backend_table.hpp"
#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/config/config_file.hpp"
#include "core/engine/runtime_caches.hpp"
#include "core/support/fd_write.hpp"
#include "core/support/json_line.hpp"
#include "core/tiers/remote/redis_url.hpp"
#include "core/tiers/user/dir_size.hpp"

#include <jitcache/version.hpp>

#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

namespace jitcache::cli {

using detail::describe_dir_size;
using detail::hide_passwords;
using detail::runtime_caches;
using detail::RuntimeCache;
using detail::shown_value;

namespace {

using Facts = std::vector<std::pair<std::string, std::string>>;

// The facts of backend `name` as a process of its own finds them: each backend is probed in a
// child process, so that a runtime one backend loads into this process does not change what
// another finds (HIP's comgr refuses a process that holds PoCL's clang, which would be `info`'s
// own doing, not the user's), and a runtime that crashes while probed costs its facts only.
// Called before this process starts any thread.
Facts probe_apart(const std::string& name, const Config& config) {
  int fds[2];
  if (::pipe(fds) != 0)
    return {{"probe", std::string("cannot probe: pipe: ") + std::strerror(errno)}};
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return {{"probe", std::string("cannot probe: fork: ") + std::strerror(error)}};
  }
  if (child == 0) {
    ::close(fds[0]);
    nlohmann::json facts = nlohmann::json::array();
    for (const auto& [fact, value] : (*find_backend(name))->facts(config))
      facts.push_back({fact, value});
    ::_exit(detail::write_all(fds[1], detail::json_line(facts)) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const auto facts = nlohmann::json::parse(answer, nullptr, false);
  Facts out;
  if (facts.is_array())
    for (const auto& pair : facts)
      if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string())
        out.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
  if (out.empty())
    out.emplace_back("probe", WIFSIGNALED(status) ? "the runtime crashed while probed (signal " +
                                                        std::to_string(WTERMSIG(status)) + ")"
                                                  : "the probe gave no answer");
  return out;
}

} // namespace

int run_info(const Config& config, const Output& out) {
  std::map<std::string, Facts> facts_of;
  for (const char* name : k_backends)
    if (backend_built(name))
      facts_of[name] = probe_apart(name, config);
  static const char* const k_levels[] = {"error", "warn", "info", "debug"};
  nlohmann::json system_path = nlohmann::json::array();
  for (const auto& p : config.system_path)
    system_path.push_back(p.string());
  nlohmann::json info = {
      {"version", k_version},
      {"format_version", k_format_version},
      {"cache_dir", config.cache_dir.string()},
      {"read_only", config.read_only},
      {"max_size", config.max_size ? nlohmann::json(*config.max_size) : nlohmann::json(nullptr)},
      {"system_path", system_path},
      {"remote", hide_passwords(config.remote)},
      {"remote_key", config.remote_key_source},
      {"log", k_levels[static_cast<int>(config.log_level)]},
      {"warnings", config.warnings},
  };
  nlohmann::json variables = nlohmann::json::object();
  for (const auto& [name, value] : config.variables)
    variables[name] = shown_value(name, value);
  info["variables"] = variables;
  // Which of them the configuration file gave: those the environment does not set.
  const std::map<std::string, std::string> environment = detail::environment_variables();
  const std::filesystem::path config_file = detail::config_file_location(environment).path;
  nlohmann::json from_file = nlohmann::json::array();
  for (const auto& [name, value] : config.variables)
    if (!environment.count(name))
      from_file.push_back(name);
  info["config_file"] =
      config_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(config_file.string());
  info["from_config_file"] = from_file;
  std::string remote_text;
  info["remotes"] = describe_remotes(config, remote_text);
  if (!config.remote.empty()) {
    // What the remotes did for this user tier so far (every backend, every process).
    Stats counters;
    if (auto store = open_user_tier(config, false); store && *store)
      if (auto read = (*store)->counters())
        counters = *read;
    std::uint64_t hits = 0, writes = 0, refused = 0;
    for (const auto& [backend, values] : counters.by_backend) {
      hits += counters.hits(backend, "remote");
      writes += counters.get(backend, Counter::remote_writes);
      refused += counters.get(backend, Counter::remote_refused);
    }
    const std::uint64_t down = counters.get("all", Counter::remote_down);
    info["remote_counters"] = {
        {"hits", hits}, {"writes", writes}, {"refused", refused}, {"down", down}};
    remote_text += "  counters: " + std::to_string(hits) + " hits, " + std::to_string(writes) +
                   " writes, " + std::to_string(refused) + " refused, down " +
                   std::to_string(down) + " times\n";
  }
  std::ostringstream text;
  text << "jitcache " << k_version << " (entry format " << k_format_version << ")\n"
       << "cache directory: " << (config.cache_dir.empty() ? "(none)" : config.cache_dir.string())
       << "\n"
       << "read-only: " << (config.read_only ? "yes" : "no") << "\n"
       << "max size: " << (config.max_size ? format_size(*config.max_size) : "unlimited") << "\n"
       << "system path: " << (config.system_path.empty() ? "(none)" : system_path.dump()) << "\n"
       << "remote: " << (config.remote.empty() ? "(none)" : hide_passwords(config.remote)) << "\n"
       << remote_text
       << "remote key: " << (config.remote_key_source.empty() ? "(none)" : config.remote_key_source)
       << "\n"
       << "log level: " << k_levels[static_cast<int>(config.log_level)] << "\n"
       << "configuration file: " << (config_file.empty() ? "(none)" : config_file.string()) << "\n"
       << "environment:" << (config.variables.empty() ? " (none set)" : "") << "\n";
  for (const auto& [name, value] : config.variables)
    text << "  " << name << "=" << shown_value(name, value)
         << (environment.count(name) ? "" : " (from the configuration file)") << "\n";
  for (const auto& warning : config.warnings)
    text << "warning: " << warning << "\n";
  nlohmann::json backends = nlohmann::json::object();
  for (const char* name : k_backends) {
    const PersistencePolicy policy = config.persistence(name);
    nlohmann::json b = {
        {"built", backend_built(name)}, {"persistent", policy.enabled}, {"reason", policy.reason}};
    text << "backend " << name << ": ";
    if (!backend_built(name)) {
      text << "not built\n";
    } else {
      text << "persistent tiers " << (policy.enabled ? "on" : "off") << " (" << policy.reason
           << ")\n";
      nlohmann::json facts = nlohmann::json::object();
      for (const auto& [fact, value] : facts_of[name]) {
        facts[fact] = value;
        text << "  " << fact << ": " << value << "\n";
      }
      b["facts"] = facts;
    }
    backends[name] = b;
  }
  info["backends"] = backends;
  nlohmann::json caches = nlohmann::json::array();
  text << "runtime caches:\n";
  for (const RuntimeCache& cache : runtime_caches(config)) {
    const std::string size = describe_dir_size(cache.dir.string());
    caches.push_back({{"name", cache.name},
                      {"backend", cache.backend},
                      {"variable", cache.variable},
                      {"dir", cache.dir.string()},
                      {"size", size}});
    text << "  " << cache.name << " (" << cache.variable << "): "
         << (cache.dir.empty() ? "unknown (HOME unset)" : cache.dir.string() + " (" + size + ")")
         << "\n";
  }
  info["runtime_caches"] = caches;
  std::string t = text.str();
  t.pop_back();
  out.emit(info, t);
  return 0;
}

} // namespace jitcache::cli
