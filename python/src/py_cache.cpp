// jitcache.Cache: construction from keyword arguments over the environment, stats, info, close.
#include "python/src/py_cache.hpp"

#include "core/config/config_table.hpp"
#include "core/tiers/remote/redis_url.hpp"
#include "python/src/bindings.hpp"
#include "python/src/errors.hpp"

#include <jitcache/version.hpp>

#include <pybind11/stl.h>

#include <optional>

namespace py = pybind11;

namespace jitcache::python {

using detail::hide_passwords;
using detail::shown_value;

PyCache::PyCache(Config config) : m_cache(std::make_shared<Cache>(std::move(config))) {}

std::shared_ptr<Cache> PyCache::get() const {
  if (!m_cache)
    throw py::value_error("this jitcache.Cache is closed");
  return m_cache;
}

void PyCache::close() {
  std::shared_ptr<Cache> cache = std::move(m_cache);
  if (!cache)
    return;
  py::gil_scoped_release release;
  cache->flush();
  cache.reset();
}

namespace {

// The environment's settings with the caller's keyword arguments in their place, resolved by the
// same code as the environment (Config::from_variables). A bad explicit value is an error here,
// not a warning: the caller, not the environment, gave it.
Config config_of(const std::optional<std::string>& dir, std::optional<bool> read_only,
                 const std::optional<std::string>& max_size,
                 const std::optional<std::string>& log) {
  std::map<std::string, std::string> vars = Config::from_environment().variables;
  std::map<std::string, std::string> given;
  if (dir) {
    if (dir->empty())
      raise_error(
          {ErrorCode::invalid_argument, "dir must not be empty (None: from the environment)"});
    given["JITCACHE_DIR"] = *dir;
  }
  if (read_only)
    given["JITCACHE_READONLY"] = *read_only ? "1" : "0";
  if (max_size)
    given["JITCACHE_MAX_SIZE"] = *max_size;
  if (log)
    given["JITCACHE_LOG"] = *log;
  for (const auto& [name, value] : given)
    vars[name] = value;
  Config config = Config::from_variables(vars);
  for (const std::string& warning : config.warnings)
    for (const auto& [name, value] : given)
      if (warning.rfind(name + "=", 0) == 0)
        raise_error({ErrorCode::invalid_argument, warning});
  return config;
}

py::dict stats_of(const Stats& stats) {
  py::dict out;
  for (const auto& [backend, counters] : stats.by_backend) {
    py::dict d;
    for (const auto& [name, value] : counters)
      d[py::str(name)] = value;
    d["hits"] = stats.hits(backend);
    out[py::str(backend)] = d;
  }
  return out;
}

py::dict info_of(const Cache& cache) {
  static const char* const k_levels[] = {"error", "warn", "info", "debug"};
  const Config& config = cache.config();
  py::dict persistent;
  for (const char* backend : k_backends) {
    const PersistencePolicy policy = config.persistence(backend);
    persistent[backend] =
        py::dict(py::arg("enabled") = policy.enabled, py::arg("reason") = policy.reason);
  }
  py::list system_path;
  for (const auto& path : config.system_path)
    system_path.append(path.string());
  py::dict info;
  info["version"] = k_version;
  info["format_version"] = k_format_version;
  info["cache_dir"] = config.cache_dir.string();
  info["read_only"] = config.read_only;
  info["max_size"] =
      config.max_size ? py::object(py::int_(*config.max_size)) : py::object(py::none());
  info["system_path"] = system_path;
  info["remote"] = hide_passwords(config.remote);
  info["log"] = k_levels[static_cast<int>(config.log_level)];
  info["persistent"] = persistent;
  py::dict variables;
  for (const auto& [name, value] : config.variables)
    variables[py::str(name)] = shown_value(name, value);
  info["variables"] = variables;
  info["warnings"] = config.warnings;
  return info;
}

} // namespace

void bind_cache(py::module_& m) {
  py::class_<PyCache>(m, "Cache", R"(A kernel cache: the memory tier and the user tier (LMDB).

Cache(dir=None, read_only=None, max_size=None, log=None): each argument left as None is taken
from the environment (JITCACHE_DIR, JITCACHE_READONLY, JITCACHE_MAX_SIZE, JITCACHE_LOG); the
other variables (JITCACHE_DISABLE, POCL_KERNEL_CACHE, ...) always are. dir is the directory that
JITCACHE_DIR would name (the format version is appended); max_size a size such as "10G" or a
number of bytes. Bad values raise jitcache.ArgumentError.

Thread-safe. close() (or leaving a `with` block) finishes pending stores; a closed cache raises
ValueError. A Cache that is not closed finishes them when it is garbage-collected; one left alive
at exit may lose them (the next process compiles those kernels again). default_cache() is closed
at exit.)")
      .def(py::init([](std::optional<std::string> dir, std::optional<bool> read_only,
                       std::optional<py::object> max_size, std::optional<std::string> log) {
             std::optional<std::string> size;
             if (max_size) {
               if (py::isinstance<py::bool_>(*max_size) ||
                   !(py::isinstance<py::int_>(*max_size) || py::isinstance<py::str>(*max_size)))
                 throw py::type_error("max_size must be a str such as '10G' or an int (bytes)");
               size = py::str(*max_size).cast<std::string>();
             }
             return std::make_unique<PyCache>(config_of(dir, read_only, size, log));
           }),
           py::kw_only(), py::arg("dir") = py::none(), py::arg("read_only") = py::none(),
           py::arg("max_size") = py::none(), py::arg("log") = py::none())
      .def(
          "stats", [](const PyCache& self) { return stats_of(self.get()->session_stats()); },
          "Counters of this Cache since it was created: {backend: {counter: value}}, with "
          "'hits' (all tiers), 'hits.<tier>', 'misses', 'compiles', 'compile_errors', "
          "'rejected', 'bytes_stored', ...")
      .def(
          "info", [](const PyCache& self) { return info_of(*self.get()); },
          "The configuration in force: version, cache_dir, read_only, max_size, system_path, "
          "remote, log, persistent ({backend: {enabled, reason}}), variables, warnings.")
      .def(
          "flush",
          [](const PyCache& self) {
            std::shared_ptr<Cache> cache = self.get();
            py::gil_scoped_release release;
            cache->flush();
          },
          "Waits until every pending store has been written.")
      .def("close", &PyCache::close,
           "Finishes pending stores and releases the cache; later calls raise ValueError. A "
           "second close() does nothing.")
      .def_property_readonly("closed", &PyCache::closed)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyCache& self, py::args) { self.close(); });
}

} // namespace jitcache::python
