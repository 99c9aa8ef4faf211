// The backend-neutral part of the C API (include/jitcache/jitcache.h): errors, the cache
// handle, statistics. Each backend's functions are in backends/<name>/<name>_c_api.cpp.

#include "bindings/c/c_api.hpp"

#include <jitcache/cohort.hpp>

#include <jitcache/version.hpp>

#include <cstdlib>
#include <cstring>

namespace jitcache::c_api {

namespace {

struct LastError {
  std::string message;
  std::string log;
};

// Per thread, so that threads sharing one handle never see each other's errors.
thread_local LastError t_last;

jitcache_error to_c(ErrorCode code) {
  switch (code) {
  case ErrorCode::invalid_argument:
    return JITCACHE_ERR_INVALID_ARGUMENT;
  case ErrorCode::compile_failed:
    return JITCACHE_ERR_COMPILE_FAILED;
  case ErrorCode::load_failed:
    return JITCACHE_ERR_LOAD_FAILED;
  case ErrorCode::runtime_error:
    return JITCACHE_ERR_RUNTIME_ERROR;
  case ErrorCode::runtime_missing:
    return JITCACHE_ERR_RUNTIME_MISSING;
  case ErrorCode::no_device:
    return JITCACHE_ERR_NO_DEVICE;
  case ErrorCode::unsupported:
    return JITCACHE_ERR_UNSUPPORTED;
  case ErrorCode::io_error:
    return JITCACHE_ERR_IO_ERROR;
  case ErrorCode::store_full:
    return JITCACHE_ERR_STORE_FULL;
  case ErrorCode::read_only:
    return JITCACHE_ERR_READ_ONLY;
  case ErrorCode::corrupt:
    return JITCACHE_ERR_CORRUPT;
  }
  return JITCACHE_ERR_INTERNAL;
}

// A C caller may store any int in an enum; in C++ loading a value outside its enumerators' range
// is undefined (a check of it could be optimised away), so an enum from the caller is read as the
// int its bytes hold.
template <typename Enum> int int_of(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int));
  int result;
  std::memcpy(&result, &value, sizeof result);
  return result;
}

void copy_truncated(char* out, std::size_t size, const std::string& text) {
  std::size_t n = text.size() < size - 1 ? text.size() : size - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// The explicit settings as the variables Config::from_variables reads, so that a setting means
// exactly what its environment variable means.
std::map<std::string, std::string> to_variables(const jitcache_settings& s) {
  static const char* const k_levels[] = {"error", "warn", "info", "debug"};
  std::map<std::string, std::string> vars;
  if (s.dir && *s.dir)
    vars["JITCACHE_DIR"] = s.dir;
  if (s.disabled)
    vars["JITCACHE_DISABLE"] = "1";
  else if (s.disabled_backends && *s.disabled_backends)
    vars["JITCACHE_DISABLE"] = s.disabled_backends;
  if (s.read_only)
    vars["JITCACHE_READONLY"] = "1";
  if (s.max_size)
    vars["JITCACHE_MAX_SIZE"] = std::to_string(s.max_size);
  // NULL or "": no packages at all, as the header says; an unset JITCACHE_SYSTEM_PATH would mean
  // the build's default folder, ":" means none.
  vars["JITCACHE_SYSTEM_PATH"] = s.system_path && *s.system_path ? s.system_path : ":";
  vars["JITCACHE_LOG"] = k_levels[s.log_level];
  vars["JITCACHE_OPENCL_STORE"] = s.opencl_store == JITCACHE_STORE_WAIT ? "wait" : "detach";
  return vars;
}

jitcache_error open_with(Config config, jitcache_cache** out) {
  *out = new jitcache_cache(std::move(config));
  return succeed();
}

void fill_backend(const Stats& stats, const std::string& backend,
                  jitcache_backend_statistics& out) {
  out.hits = stats.hits(backend);
  out.memory_hits = stats.hits(backend, "memory");
  out.misses = stats.get(backend, Counter::misses);
  out.compiles = stats.get(backend, Counter::compiles);
  out.compile_errors = stats.get(backend, Counter::compile_errors);
  out.rejected = stats.get(backend, Counter::rejected);
  out.bytes_stored = stats.get(backend, Counter::bytes_stored);
}

} // namespace

jitcache_error fail(const Error& error) {
  t_last.message = error.message;
  t_last.log = error.log;
  return to_c(error.code);
}

jitcache_error fail_argument(std::string message) {
  return fail_with(JITCACHE_ERR_INVALID_ARGUMENT, std::move(message));
}

jitcache_error fail_with(jitcache_error code, std::string message) {
  t_last.message = std::move(message);
  t_last.log.clear();
  return code;
}

jitcache_error succeed() {
  t_last.message.clear();
  t_last.log.clear();
  return JITCACHE_OK;
}

void fill_info(const BuildInfo& info, jitcache_info* out) {
  if (!out)
    return;
  out->outcome = info.outcome == Outcome::hit ? JITCACHE_HIT : JITCACHE_MISS;
  copy_truncated(out->tier, sizeof out->tier, info.tier);
  out->compile_ms = info.compile_ms;
  out->load_ms = info.load_ms;
  out->total_ms = info.total_ms;
  out->bytes = info.bytes;
  copy_truncated(out->key, sizeof out->key, info.key.hex());
}

const char* keep_name(jitcache_cache& cache, const std::string& text) {
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.names.insert(text).first->c_str();
}

void keep_module(jitcache_cache& cache, const void* module, std::shared_ptr<void> owner) {
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.modules.emplace(module, std::move(owner));
}

bool was_checked(jitcache_cache& cache, const void* first, const void* second) {
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.checked.count({first, second}) != 0;
}

void remember_checked(jitcache_cache& cache, const void* first, const void* second,
                      std::shared_ptr<void> owner) {
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.checked.emplace(std::make_pair(first, second), std::move(owner));
}

void fill_lowered_names(jitcache_cache& cache, const jitcache_program& program,
                        const std::map<std::string, std::string>& lowered, const char** out) {
  if (!out)
    return;
  for (std::size_t i = 0; i < program.num_name_expressions; ++i) {
    auto it = lowered.find(program.name_expressions[i]);
    out[i] = it == lowered.end() ? nullptr : keep_name(cache, it->second);
  }
}

void* copy_out(std::string_view bytes) {
  void* memory = std::malloc(bytes.empty() ? 1 : bytes.size());
  if (!memory)
    throw std::bad_alloc();
  std::memcpy(memory, bytes.data(), bytes.size());
  return memory;
}

jitcache_error check_program(const jitcache_program* program) {
  if (!program)
    return fail_argument("program is NULL");
  if (!program->source)
    return fail_argument("program source is NULL");
  if (program->source_len == 0)
    return fail_argument("program source is empty (source_len 0)");
  if ((program->num_options && !program->options) || (program->num_headers && !program->headers) ||
      (program->num_name_expressions && !program->name_expressions))
    return fail_argument("a program array is NULL but its count is not 0");
  for (std::size_t i = 0; i < program->num_options; ++i)
    if (!program->options[i])
      return fail_argument("program option " + std::to_string(i) + " is NULL");
  for (std::size_t i = 0; i < program->num_headers; ++i)
    if (!program->headers[i].name || !program->headers[i].content)
      return fail_argument("program header " + std::to_string(i) + " has a NULL name or content");
  for (std::size_t i = 0; i < program->num_name_expressions; ++i)
    if (!program->name_expressions[i])
      return fail_argument("program name expression " + std::to_string(i) + " is NULL");
  return JITCACHE_OK;
}

} // namespace jitcache::c_api

using namespace jitcache;
using namespace jitcache::c_api;

extern "C" {

const char* jitcache_strerror(jitcache_error code) {
  switch (int_of(code)) {
  case JITCACHE_OK:
    return "ok";
  case JITCACHE_ERR_INVALID_ARGUMENT:
    return "invalid_argument";
  case JITCACHE_ERR_COMPILE_FAILED:
    return "compile_failed";
  case JITCACHE_ERR_LOAD_FAILED:
    return "load_failed";
  case JITCACHE_ERR_RUNTIME_ERROR:
    return "runtime_error";
  case JITCACHE_ERR_RUNTIME_MISSING:
    return "runtime_missing";
  case JITCACHE_ERR_NO_DEVICE:
    return "no_device";
  case JITCACHE_ERR_UNSUPPORTED:
    return "unsupported";
  case JITCACHE_ERR_IO_ERROR:
    return "io_error";
  case JITCACHE_ERR_STORE_FULL:
    return "store_full";
  case JITCACHE_ERR_READ_ONLY:
    return "read_only";
  case JITCACHE_ERR_CORRUPT:
    return "corrupt";
  case JITCACHE_ERR_NO_MEMORY:
    return "no_memory";
  case JITCACHE_ERR_INTERNAL:
    return "internal";
  }
  return "unknown";
}

const char* jitcache_last_error(void) {
  return t_last.message.c_str();
}

const char* jitcache_last_build_log(void) {
  return t_last.log.c_str();
}

void jitcache_free(void* memory) {
  std::free(memory);
}

const char* jitcache_version(void) {
  return k_version;
}

void jitcache_settings_init(jitcache_settings* settings) {
  if (!settings)
    return;
  *settings = jitcache_settings{};
  settings->log_level = JITCACHE_LOG_WARN;
}

jitcache_error jitcache_open_env(jitcache_cache** cache) {
  return guarded([&] {
    if (!cache)
      return fail_argument("cache is NULL");
    return open_with(Config::from_environment(), cache);
  });
}

jitcache_error jitcache_open(const jitcache_settings* settings, jitcache_cache** cache) {
  return guarded([&] {
    if (!settings || !cache)
      return fail_argument(settings ? "cache is NULL" : "settings is NULL");
    const int level = int_of(settings->log_level);
    if (level < JITCACHE_LOG_ERROR || level > JITCACHE_LOG_DEBUG)
      return fail_argument("settings log_level " + std::to_string(level) +
                           " is not a jitcache_log_level");
    const int store = int_of(settings->opencl_store);
    if (store != JITCACHE_STORE_DETACH && store != JITCACHE_STORE_WAIT)
      return fail_argument("settings opencl_store " + std::to_string(store) +
                           " is not a jitcache_store_mode");
    Config config = Config::from_variables(to_variables(*settings));
    if (!config.warnings.empty())
      return fail_argument("bad setting: " + config.warnings.front());
    if (!settings->dir || !*settings->dir)
      config.cache_dir.clear(); // not the build's default folder: the settings are the whole truth
    if (settings->memory_bytes)
      config.memory_bytes = settings->memory_bytes;
    return open_with(std::move(config), cache);
  });
}

jitcache_error jitcache_flush(jitcache_cache* cache) {
  return guarded([&] {
    if (!cache)
      return fail_argument("cache is NULL");
    cache->cache.flush();
    return succeed();
  });
}

void jitcache_close(jitcache_cache* cache) {
  guarded([&] {
    if (cache)
      cache->cache.flush();
    delete cache;
    return succeed();
  });
}

jitcache_error jitcache_stats(jitcache_cache* cache, jitcache_statistics* stats) {
  return guarded([&] {
    if (!cache || !stats)
      return fail_argument(cache ? "stats is NULL" : "cache is NULL");
    const Stats session = cache->cache.session_stats();
    fill_backend(session, "opencl", stats->opencl);
    fill_backend(session, "cuda", stats->cuda);
    fill_backend(session, "hip", stats->hip);
    return succeed();
  });
}

} // extern "C"

jitcache::Cache& jitcache::cohort::cache_of(jitcache_cache* cache) {
  return cache->cache;
}
