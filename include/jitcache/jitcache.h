#pragma once

/* jitcache's C API (C99): the C++ API of <jitcache/cache.hpp>, <jitcache/opencl.hpp>,
 * <jitcache/cuda.hpp> and <jitcache/hip.hpp> for C, Fortran, Python (ctypes/cffi) and other
 * languages. The header is the same whatever backends the library was built with: the functions
 * of a backend not built return JITCACHE_ERR_UNSUPPORTED. It includes no GPU SDK header: the
 * runtime handles are declared with the SDKs' own struct tags (struct _cl_context * is
 * cl_context, struct CUmod_st * is CUmodule, struct ihipModule_t * is hipModule_t).
 *
 * Conventions, for every function below unless it says otherwise:
 * - A function returns JITCACHE_OK (0) or an error code; on an error its output parameters are
 *   left untouched, and jitcache_last_error() / jitcache_last_build_log() describe it.
 * - No C++ exception ever leaves a function of this header; an unexpected one is
 *   JITCACHE_ERR_INTERNAL (its message is kept), an allocation failure JITCACHE_ERR_NO_MEMORY.
 * - A NULL pointer where one is required is JITCACHE_ERR_INVALID_ARGUMENT, never a crash. A
 *   handle that was closed, or that is not one, cannot be detected: using it is undefined.
 * - Strings given to jitcache are read during the call only and never kept.
 * - Thread safety: any number of threads may call any function on one jitcache_cache at once,
 *   except jitcache_close, which no other call on that handle may overlap or follow.
 * - Never use a jitcache_cache in a child after fork(); open a new one there (LMDB's rule). */

#include <jitcache/export.hpp>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Errors ---------------------------------------------------------------------------- */

/** Result codes. JITCACHE_ERR_INVALID_ARGUMENT .. JITCACHE_ERR_CORRUPT mirror
 *  jitcache::ErrorCode (<jitcache/error.hpp>) in order; the values are stable. */
typedef enum jitcache_error {
  JITCACHE_OK = 0,
  JITCACHE_ERR_INVALID_ARGUMENT = 1, /**< bad input: NULL handle or source, empty source, ... */
  JITCACHE_ERR_COMPILE_FAILED = 2,   /**< the compiler rejected the source; see the build log */
  JITCACHE_ERR_LOAD_FAILED = 3,      /**< the runtime rejected a binary */
  JITCACHE_ERR_RUNTIME_ERROR = 4,    /**< another runtime API call failed; the message names it */
  JITCACHE_ERR_RUNTIME_MISSING = 5,  /**< the runtime library or driver is absent */
  JITCACHE_ERR_NO_DEVICE = 6,        /**< the runtime is present but has no usable device */
  JITCACHE_ERR_UNSUPPORTED = 7,      /**< a target or feature (or a backend) not available */
  JITCACHE_ERR_IO_ERROR = 8,         /**< a file or store could not be read or written */
  JITCACHE_ERR_STORE_FULL = 9,       /**< a store ran out of space */
  JITCACHE_ERR_READ_ONLY = 10,       /**< a write was asked of a read-only cache */
  JITCACHE_ERR_CORRUPT = 11,         /**< stored bytes failed verification */
  JITCACHE_ERR_NO_MEMORY = 12,       /**< an allocation failed */
  JITCACHE_ERR_INTERNAL = 13         /**< an unexpected failure inside jitcache (a bug) */
} jitcache_error;

/** A short lowercase name of `code` ("compile_failed", ...), "unknown" for a value not listed.
 *  The string is static: never free it. Thread-safe. */
JITCACHE_EXPORT const char* jitcache_strerror(jitcache_error code);

/** The one-line message of the last error returned to the calling thread by any function of
 *  this header, "" when the last call succeeded. Errors are kept per thread, not per handle, so
 *  a handle shared by threads never mixes them up, and errors of jitcache_open are seen too.
 *  The string is owned by jitcache and valid until the calling thread's next call of a function
 *  of this header that returns a jitcache_error, or of jitcache_close; copy it to keep it.
 *  Never NULL. */
JITCACHE_EXPORT const char* jitcache_last_error(void);

/** The compiler's build log of the calling thread's last error, "" unless that error was
 *  JITCACHE_ERR_COMPILE_FAILED. Ownership and lifetime as jitcache_last_error. Never NULL. */
JITCACHE_EXPORT const char* jitcache_last_build_log(void);

/** Releases memory that jitcache allocated for the caller (jitcache_cuda_compile's and
 *  jitcache_hip_compile's binaries). NULL is allowed and does nothing. */
JITCACHE_EXPORT void jitcache_free(void* memory);

/** The library's version, e.g. "0.1.0". Static string; never free it. */
JITCACHE_EXPORT const char* jitcache_version(void);

/* ---- The cache handle ------------------------------------------------------------------ */

/** An open cache: the tiers of jitcache::Cache. Opaque; one per process per configuration. */
typedef struct jitcache_cache jitcache_cache;

/** Log verbosity (JITCACHE_LOG), least to most. */
typedef enum jitcache_log_level {
  JITCACHE_LOG_ERROR = 0,
  JITCACHE_LOG_WARN = 1,
  JITCACHE_LOG_INFO = 2,
  JITCACHE_LOG_DEBUG = 3
} jitcache_log_level;

/** When a PoCL program's binary is read and stored (JITCACHE_OPENCL_STORE). */
typedef enum jitcache_store_mode {
  /** By a detached `jitcache store` process started at jitcache_close, not waited for. */
  JITCACHE_STORE_DETACH = 0,
  /** In the process; jitcache_close waits for the stores. */
  JITCACHE_STORE_WAIT = 1
} jitcache_store_mode;

/** Explicit settings for jitcache_open; each field mirrors one environment variable (and one
 *  field of jitcache::Config). Fill it with jitcache_settings_init first, then change fields:
 *  later versions only append fields, which jitcache_settings_init sets to their defaults. */
typedef struct jitcache_settings {
  /** User-tier folder (as JITCACHE_DIR: the format version is appended, "DIR/v1"). NULL or ""
   *  means no persistent tier at all: the environment is not consulted for a default. */
  const char* dir;
  /** Nonzero: read every tier, write none (JITCACHE_READONLY=1). */
  int read_only;
  /** Nonzero: no persistent tiers for any backend (JITCACHE_DISABLE=1). */
  int disabled;
  /** Comma-separated backends without persistent tiers, e.g. "cuda,hip"; NULL for none. */
  const char* disabled_backends;
  /** Size limit of the user tier in bytes (JITCACHE_MAX_SIZE); 0 means unlimited. */
  uint64_t max_size;
  /** Colon-separated read-only package files or folders (JITCACHE_SYSTEM_PATH); NULL or "":
   *  none (not the build's default folder, which only an unset JITCACHE_SYSTEM_PATH means). */
  const char* system_path;
  /** Log verbosity (JITCACHE_LOG). */
  jitcache_log_level log_level;
  /** Byte bound of the per-process blob LRU of the memory tier; 0 means the default (64 MiB). */
  uint64_t memory_bytes;
  /** When a PoCL program's binary is stored (JITCACHE_OPENCL_STORE); default detach. */
  jitcache_store_mode opencl_store;
} jitcache_settings;

/** Sets every field of `settings` to its default: no persistent tier, read-write, nothing
 *  disabled, unlimited, warn. Does nothing when `settings` is NULL. */
JITCACHE_EXPORT void jitcache_settings_init(jitcache_settings* settings);

/** Opens a cache configured from the environment (the variables of jitcache::Config; bad values
 *  are logged once and fall back to defaults) and stores it in `*cache`. The caller owns the
 *  handle and must release it with jitcache_close. A user tier that cannot be opened is logged
 *  and skipped (the cache still works), so this fails only on bad arguments or no memory.
 *  Errors: INVALID_ARGUMENT (`cache` NULL), NO_MEMORY, INTERNAL. */
JITCACHE_EXPORT jitcache_error jitcache_open_env(jitcache_cache** cache);

/** Opens a cache configured by `settings` alone (the environment is not read for jitcache's
 *  settings) and stores it in `*cache`; ownership as jitcache_open_env. Errors:
 *  INVALID_ARGUMENT (`settings` or `cache` NULL; a bad value, e.g. an unknown backend in
 *  disabled_backends or a log level or store mode out of range: the message says which),
 *  NO_MEMORY, INTERNAL. */
JITCACHE_EXPORT jitcache_error jitcache_open(const jitcache_settings* settings,
                                             jitcache_cache** cache);

/** Waits for the stores still pending in the background (OpenCL binaries are stored after
 *  jitcache_cl_build_program returns) and writes the counters to the user tier. Failures to
 *  write are logged, not returned (a cache that cannot write still works).
 *  Errors: INVALID_ARGUMENT (`cache` NULL), INTERNAL. */
JITCACHE_EXPORT jitcache_error jitcache_flush(jitcache_cache* cache);

/** Flushes (as jitcache_flush) and releases `cache`. Every CUmodule and hipModule_t handed out
 *  through it is unloaded when no other cache holds it: release them first. OpenCL programs
 *  handed out stay valid (the caller owns its references). NULL is allowed and does nothing.
 *  Must not overlap any other call on `cache`; the handle is invalid afterwards. */
JITCACHE_EXPORT void jitcache_close(jitcache_cache* cache);

/* ---- How a request was served ---------------------------------------------------------- */

/** Whether a request was answered from a tier or compiled. */
typedef enum jitcache_outcome { JITCACHE_MISS = 0, JITCACHE_HIT = 1 } jitcache_outcome;

/** How one build request was served (jitcache::BuildInfo). A plain value: no pointers. */
typedef struct jitcache_info {
  jitcache_outcome outcome;
  char tier[32];     /**< tier that answered ("memory", "user", ...) or "compile"; NUL-ended */
  double compile_ms; /**< time in the runtime compiler (0 on a hit) */
  double load_ms;    /**< time loading the binary into the runtime (0 for offline compiles) */
  double total_ms;   /**< wall time of the whole call */
  uint64_t bytes;    /**< size of the binary */
  char key[65];      /**< the key: 64 lowercase hex digits, NUL-ended */
} jitcache_info;

/* ---- OpenCL ---------------------------------------------------------------------------- */

struct _cl_context;
struct _cl_device_id;
struct _cl_program;

/** Builds (or finds) the program of `source_len` bytes at `source` with build `options` (NULL
 *  or a NUL-ended string) for `device` of `context`, as jitcache::opencl::build_program: on a
 *  hit, the stored binary or the program already built in this process; on a miss, compiled
 *  from source, its binary stored in the background (see jitcache_flush).
 *
 *  On success `*program` is a built cl_program of which the caller owns one reference and must
 *  clReleaseProgram it (it stays valid after jitcache_close); `*info`, when `info` is not NULL,
 *  says how it was served. Errors: INVALID_ARGUMENT (`cache`, `context`, `device`, `source` or
 *  `program` NULL; `source_len` 0), COMPILE_FAILED (the build log is jitcache_last_build_log();
 *  nothing is stored), RUNTIME_ERROR (an OpenCL call failed, e.g. a device that does not belong
 *  to `context`; the message names the call), UNSUPPORTED (the library was built without
 *  OpenCL), NO_MEMORY, INTERNAL. Thread-safe: concurrent calls for the same source, options,
 *  context and device compile once. */
JITCACHE_EXPORT jitcache_error
jitcache_cl_build_program(jitcache_cache* cache, struct _cl_context* context,
                          struct _cl_device_id* device, const char* source, size_t source_len,
                          const char* options, struct _cl_program** program, jitcache_info* info);

/* ---- CUDA and HIP ---------------------------------------------------------------------- */

/** A header given in memory: `#include "name"` and `#include <name>` find it before any file.
 *  Both strings NUL-ended and not NULL. */
typedef struct jitcache_header {
  const char* name;
  const char* content;
} jitcache_header;

/** What to compile with NVRTC or hipRTC (jitcache::cuda::Program, jitcache::hip::Program). Only
 *  read during the call. Arrays may be NULL when their count is 0. */
typedef struct jitcache_program {
  const char* source;         /**< the CUDA or HIP C++ source; not NULL */
  size_t source_len;          /**< its length in bytes; not 0 */
  const char* name;           /**< the compiler's program name; NULL: "program.cu"/".hip" */
  const char* const* options; /**< one option per element, e.g. "-I", "kernels", "-DN=4" */
  size_t num_options;
  const jitcache_header* headers; /**< headers given in memory */
  size_t num_headers;
  const char* const* name_expressions; /**< C++ names to instantiate, e.g. "scale<float, 4>" */
  size_t num_name_expressions;
} jitcache_program;

struct CUmod_st;
struct ihipModule_t;

/** Loads `program` into the current CUDA context, compiled for its device's architecture, as
 *  jitcache::cuda::load_module. On success `*module` is the CUmodule: it stays loaded while
 *  `cache` is open (and the context lives); never cuModuleUnload it. When `lowered_names` is not
 *  NULL it must have program->num_name_expressions elements: element i receives the lowered
 *  (mangled) name of name expression i, for cuModuleGetFunction; those strings are owned by
 *  `cache` and valid until jitcache_close. `*info` (if not NULL) says how it was served.
 *  Errors: INVALID_ARGUMENT (a NULL argument, an empty source, an -arch option, no current
 *  context), RUNTIME_MISSING (no driver or no NVRTC), UNSUPPORTED (the device is too old for
 *  NVRTC, or the library was built without CUDA), COMPILE_FAILED (with the build log),
 *  LOAD_FAILED, RUNTIME_ERROR, NO_MEMORY, INTERNAL. Thread-safe. */
JITCACHE_EXPORT jitcache_error jitcache_cuda_load_module(jitcache_cache* cache,
                                                         const jitcache_program* program,
                                                         struct CUmod_st** module,
                                                         const char** lowered_names,
                                                         jitcache_info* info);

/** Compiles (or finds) `program` for `arch` ("sm_80", "sm_90a") without a driver or device and
 *  stores it, as jitcache::cuda::compile: a later jitcache_cuda_load_module on a device of that
 *  architecture is a hit. On success `*binary` is a copy of the cubin, `*binary_size` its size;
 *  the caller owns it and must jitcache_free it. `lowered_names` and `info` as for
 *  jitcache_cuda_load_module. Errors: INVALID_ARGUMENT (a NULL argument, an empty source, an arch
 *  not of the form sm_XY), UNSUPPORTED (an arch NVRTC cannot target: the message lists those it
 *  can; or the library was built without CUDA), RUNTIME_MISSING (no NVRTC), COMPILE_FAILED (with
 *  the build log; nothing is stored), RUNTIME_ERROR, NO_MEMORY, INTERNAL. Thread-safe. */
JITCACHE_EXPORT jitcache_error jitcache_cuda_compile(jitcache_cache* cache, const char* arch,
                                                     const jitcache_program* program, void** binary,
                                                     size_t* binary_size,
                                                     const char** lowered_names,
                                                     jitcache_info* info);

/** Loads `program` on the calling thread's current HIP device, compiled for its full target id,
 *  as jitcache::hip::load_module. `*module` is the hipModule_t: it stays loaded while `cache` is
 *  open; never hipModuleUnload it. `lowered_names` and `info` as for jitcache_cuda_load_module.
 *  Errors: INVALID_ARGUMENT, RUNTIME_MISSING, NO_DEVICE (no AMD GPU; the message names the HIP
 *  error), UNSUPPORTED (a target the toolchain does not know, or the library was built without
 *  HIP), COMPILE_FAILED (with the build log), LOAD_FAILED, RUNTIME_ERROR, NO_MEMORY, INTERNAL.
 *  Never aborts the process. Thread-safe (compiles are serialised within a process). */
JITCACHE_EXPORT jitcache_error jitcache_hip_load_module(jitcache_cache* cache,
                                                        const jitcache_program* program,
                                                        struct ihipModule_t** module,
                                                        const char** lowered_names,
                                                        jitcache_info* info);

/** Compiles (or finds) `program` for `target` ("gfx90a", "gfx90a:xnack+") without a GPU and
 *  stores it, as jitcache::hip::compile. `*binary` is a copy of the AMDGPU code object (as
 *  hipModuleLoadData takes it), `*binary_size` its size; the caller must jitcache_free it.
 *  `lowered_names` and `info` as for jitcache_cuda_load_module. Errors: INVALID_ARGUMENT (a NULL
 *  argument, an empty source, a malformed target id), UNSUPPORTED (a target the toolchain does
 *  not know: the message lists those it does; or the library was built without HIP),
 *  RUNTIME_MISSING, COMPILE_FAILED (with the build log), RUNTIME_ERROR, NO_MEMORY, INTERNAL.
 *  Thread-safe. */
JITCACHE_EXPORT jitcache_error jitcache_hip_compile(jitcache_cache* cache, const char* target,
                                                    const jitcache_program* program, void** binary,
                                                    size_t* binary_size, const char** lowered_names,
                                                    jitcache_info* info);

/* ---- Statistics ------------------------------------------------------------------------ */

/** Counters of one backend (jitcache::Stats; the names of <jitcache/stats.hpp>). */
typedef struct jitcache_backend_statistics {
  uint64_t hits;           /**< requests answered by any tier */
  uint64_t memory_hits;    /**< of which by the memory tier */
  uint64_t misses;         /**< requests no tier could answer */
  uint64_t compiles;       /**< successful compiles */
  uint64_t compile_errors; /**< compiles that failed */
  uint64_t rejected;       /**< stored binaries the runtime refused */
  uint64_t bytes_stored;   /**< payload bytes written */
} jitcache_backend_statistics;

/** The counters of this process's session of a cache, per backend. */
typedef struct jitcache_statistics {
  jitcache_backend_statistics opencl;
  jitcache_backend_statistics cuda;
  jitcache_backend_statistics hip;
} jitcache_statistics;

/** Stores in `*stats` the counters of `cache` since it was opened (this process only; `jitcache
 *  stats` shows the totals of every process). Errors: INVALID_ARGUMENT (a NULL argument),
 *  NO_MEMORY, INTERNAL. Thread-safe. */
JITCACHE_EXPORT jitcache_error jitcache_stats(jitcache_cache* cache, jitcache_statistics* stats);

#ifdef __cplusplus
}
#endif
