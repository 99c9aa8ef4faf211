#pragma once

// What the C API's files share (bindings/c/c_api.cpp and backends/*/<backend>_c_api.cpp): the cache
// handle, the per-thread last error, and the one place where C++ failures become error codes.

#include <jitcache/cache.hpp>
#include <jitcache/jitcache.h>

#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <string_view>

struct jitcache_cache {
  explicit jitcache_cache(jitcache::Config config) : cache(std::move(config)) {}

  jitcache::Cache cache;
  std::mutex mutex; ///< guards the three members below
  /// Lowered names handed out, valid until jitcache_close (the C API hands out pointers).
  std::set<std::string, std::less<>> names;
  /// Modules handed out (CUDA, HIP), kept loaded until jitcache_close.
  std::map<const void*, std::shared_ptr<void>> modules;
  /// Pairs of runtime objects a backend has checked belong together (OpenCL: a device of a
  /// context), each with what keeps the first alive until jitcache_close, so that its address
  /// cannot be reused by another object while the check is remembered.
  std::map<std::pair<const void*, const void*>, std::shared_ptr<void>> checked;
};

namespace jitcache::c_api {

/// Records `error` as the calling thread's last error and returns its code.
jitcache_error fail(const Error& error);
/// Records a failure of the caller's input; returns JITCACHE_ERR_INVALID_ARGUMENT.
jitcache_error fail_argument(std::string message);
/// Records a failure that has no jitcache::ErrorCode (no memory, internal); returns `code`.
jitcache_error fail_with(jitcache_error code, std::string message);
/// Clears the calling thread's last error; returns JITCACHE_OK.
jitcache_error succeed();

/// Runs `body` (returning a jitcache_error), turning any exception into an error code: no C++
/// exception may cross the C API.
template <typename Body> jitcache_error guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail_with(JITCACHE_ERR_NO_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail_with(JITCACHE_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail_with(JITCACHE_ERR_INTERNAL, "internal error: unknown exception");
  }
}

/// Copies `info` into the C struct (when `out` is not null).
void fill_info(const BuildInfo& info, jitcache_info* out);

/// A string owned by `cache` until jitcache_close, equal to `text`.
const char* keep_name(jitcache_cache& cache, const std::string& text);
/// Keeps `owner` (which keeps `module` loaded) until jitcache_close.
void keep_module(jitcache_cache& cache, const void* module, std::shared_ptr<void> owner);

/// Whether (first, second) was remembered by remember_checked.
bool was_checked(jitcache_cache& cache, const void* first, const void* second);
/// Remembers that (first, second) passed a backend's check; `owner` keeps `first` alive.
void remember_checked(jitcache_cache& cache, const void* first, const void* second,
                      std::shared_ptr<void> owner);

/// Hands the lowered names of `program`'s name expressions out through `out` (when not null).
void fill_lowered_names(jitcache_cache& cache, const jitcache_program& program,
                        const std::map<std::string, std::string>& lowered, const char** out);

/// A malloc'd copy of `bytes` for the caller (released with jitcache_free); throws bad_alloc.
void* copy_out(std::string_view bytes);

/// Checks the parts of a jitcache_program every backend needs (source, counts and arrays);
/// returns JITCACHE_OK or records the failure.
jitcache_error check_program(const jitcache_program* program);

/// The C program as a backend's Program (jitcache::cuda::Program, jitcache::hip::Program: the
/// same shape), its name left at the backend's default when the C one is NULL.
template <typename Program> Program to_program(const jitcache_program& c) {
  Program p;
  p.source.assign(c.source, c.source_len);
  if (c.name)
    p.name = c.name;
  p.options.assign(c.options, c.options + c.num_options);
  for (std::size_t i = 0; i < c.num_headers; ++i)
    p.headers.push_back({c.headers[i].name, c.headers[i].content});
  p.name_expressions.assign(c.name_expressions, c.name_expressions + c.num_name_expressions);
  return p;
}

/// Hands a loaded module (cuda::Module, hip::Module) out through the C API's out-parameters,
/// keeping it loaded until jitcache_close.
template <typename Module, typename Handle>
jitcache_error hand_out_module(jitcache_cache& cache, const jitcache_program& program,
                               Expected<Module> loaded, Handle* module, const char** lowered_names,
                               jitcache_info* info) {
  if (!loaded)
    return fail(loaded.error());
  keep_module(cache, loaded->module, loaded->owner);
  fill_lowered_names(cache, program, loaded->lowered_names, lowered_names);
  fill_info(loaded->info, info);
  *module = loaded->module;
  return succeed();
}

/// Hands an offline compile's result (cuda::Binary, hip::CodeObject) out: a copy of its
/// `bytes` member for the caller to jitcache_free, and its names and info.
template <typename Binary>
jitcache_error hand_out_binary(jitcache_cache& cache, const jitcache_program& program,
                               Expected<Binary> compiled, std::string Binary::*bytes, void** binary,
                               size_t* binary_size, const char** lowered_names,
                               jitcache_info* info) {
  if (!compiled)
    return fail(compiled.error());
  const std::string& payload = (*compiled).*bytes;
  void* copy = copy_out(payload);
  fill_lowered_names(cache, program, compiled->lowered_names, lowered_names);
  fill_info(compiled->info, info);
  *binary = copy;
  *binary_size = payload.size();
  return succeed();
}

} // namespace jitcache::c_api
