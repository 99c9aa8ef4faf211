/* Tests of the C API (include/jitcache/jitcache.h), written in C99 and linked against the
 * shared library only: what a C program sees. One backend per process (`c_api_test opencl`,
 * `cuda`, `hip`, `common`): PoCL's clang and hipRTC's comgr cannot share a process. Each run
 * uses its own temporary cache folder. Exit status 0 when every check passed. */
#define _POSIX_C_SOURCE 200809L

#include <jitcache/jitcache.h>

#ifdef JITCACHE_TEST_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef JITCACHE_KERNELS
#error "JITCACHE_KERNELS (the kernels/ folder) must be defined"
#endif

static int g_failures = 0;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond,     \
              jitcache_last_error());                                                              \
      ++g_failures;                                                                                \
    }                                                                                              \
  } while (0)

#define CHECK_RC(expr, expected) CHECK((expr) == (expected))

static char g_dir[256];

static void make_temp_dir(void) {
  const char* base = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/jitcache-c-api-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    exit(2);
  }
}

static void remove_temp_dir(void) {
  char command[300];
  snprintf(command, sizeof command, "rm -rf '%s'", g_dir);
  if (system(command) != 0)
    fprintf(stderr, "could not remove %s\n", g_dir);
}

/* Settings for a cache in `dir` whose OpenCL binaries are stored when jitcache_close returns: a
 * detached store would write after the test has removed its directory, and leave it behind. */
static void settings_in(jitcache_settings* settings, const char* dir) {
  jitcache_settings_init(settings);
  settings->dir = dir;
  settings->opencl_store = JITCACHE_STORE_WAIT;
}

static jitcache_cache* open_cache(void) {
  jitcache_settings settings;
  jitcache_cache* cache = NULL;
  settings_in(&settings, g_dir);
  CHECK_RC(jitcache_open(&settings, &cache), JITCACHE_OK);
  return cache;
}

static char* read_file(const char* name, size_t* size) {
  char path[512];
  FILE* f;
  long n;
  char* text;
  snprintf(path, sizeof path, "%s/%s", JITCACHE_KERNELS, name);
  f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = malloc((size_t)n + 1);
  if (!text || fread(text, 1, (size_t)n, f) != (size_t)n)
    exit(2);
  text[n] = '\0';
  fclose(f);
  *size = (size_t)n;
  return text;
}

/* ---- backend-neutral ------------------------------------------------------------------- */

static void test_common(void) {
  jitcache_settings settings;
  jitcache_cache* cache = NULL;
  jitcache_statistics stats;

  CHECK(strcmp(jitcache_strerror(JITCACHE_OK), "ok") == 0);
  CHECK(strcmp(jitcache_strerror(JITCACHE_ERR_COMPILE_FAILED), "compile_failed") == 0);
  CHECK(strcmp(jitcache_strerror(JITCACHE_ERR_UNSUPPORTED), "unsupported") == 0);
  CHECK(strcmp(jitcache_strerror((jitcache_error)999), "unknown") == 0);
  CHECK(strlen(jitcache_version()) > 0);

  CHECK_RC(jitcache_open_env(NULL), JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(jitcache_last_error(), "NULL") != NULL);
  CHECK_RC(jitcache_open(NULL, &cache), JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK(cache == NULL);

  jitcache_settings_init(&settings);
  settings.dir = g_dir;
  settings.disabled_backends = "opencl,banana";
  CHECK_RC(jitcache_open(&settings, &cache), JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(jitcache_last_error(), "banana") != NULL);
  settings.disabled_backends = NULL;
  settings.log_level = (jitcache_log_level)7;
  CHECK_RC(jitcache_open(&settings, &cache), JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(jitcache_last_error(), "log_level 7") != NULL);
  CHECK(cache == NULL);
  settings.log_level = JITCACHE_LOG_WARN;
  settings.opencl_store = (jitcache_store_mode)-1;
  CHECK_RC(jitcache_open(&settings, &cache), JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK(strstr(jitcache_last_error(), "opencl_store -1") != NULL);
  CHECK(cache == NULL);

  CHECK_RC(jitcache_open_env(&cache), JITCACHE_OK);
  CHECK(cache != NULL);
  CHECK(strcmp(jitcache_last_error(), "") == 0);
  CHECK_RC(jitcache_stats(cache, &stats), JITCACHE_OK);
  CHECK(stats.opencl.hits == 0 && stats.cuda.misses == 0 && stats.hip.compiles == 0);
  CHECK_RC(jitcache_stats(NULL, &stats), JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK_RC(jitcache_stats(cache, NULL), JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK_RC(jitcache_flush(NULL), JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK_RC(jitcache_flush(cache), JITCACHE_OK);
  jitcache_close(cache);
  jitcache_close(NULL);
  jitcache_free(NULL);
}

/* ---- OpenCL on PoCL -------------------------------------------------------------------- */

#ifdef JITCACHE_TEST_OPENCL

static const char* const k_bad_source = "__kernel void broken(__global float* x) { x[0] = ; }";

/* One thread's request on a shared handle, and what that thread saw afterwards. */
typedef struct request {
  jitcache_cache* cache;
  cl_context context;
  cl_device_id device;
  const char* source;
  const char* options;
  jitcache_error rc;
  int saw_error_message; /* jitcache_last_error() was not empty */
  int saw_build_log;     /* jitcache_last_build_log() mentioned an error */
} request;

static void* run_request(void* arg) {
  request* r = arg;
  int i;
  for (i = 0; i < 5; ++i) {
    cl_program program = NULL;
    r->rc = jitcache_cl_build_program(r->cache, r->context, r->device, r->source, strlen(r->source),
                                      r->options, &program, NULL);
    r->saw_error_message = strlen(jitcache_last_error()) > 0;
    r->saw_build_log = strstr(jitcache_last_build_log(), "error") != NULL;
    if (program)
      clReleaseProgram(program);
    if ((r->rc == JITCACHE_OK) == r->saw_error_message)
      break; /* a success with a message or a failure without one: stop, checked below */
  }
  return NULL;
}

static void test_opencl(void) {
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_int err;
  cl_program program = NULL;
  jitcache_cache* cache;
  jitcache_info info;
  jitcache_statistics stats;
  size_t size;
  char* source = read_file("vector_ops.cl", &size);
  char options[600];
  snprintf(options, sizeof options, "-I %s", JITCACHE_KERNELS);

  CHECK(clGetPlatformIDs(1, &platform, NULL) == CL_SUCCESS);
  CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) == CL_SUCCESS);
  context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  CHECK(err == CL_SUCCESS);

  /* A miss compiles; after jitcache_close stored it, a new handle hits the user tier. */
  cache = open_cache();
  CHECK_RC(
      jitcache_cl_build_program(cache, context, device, source, size, options, &program, &info),
      JITCACHE_OK);
  CHECK(program != NULL);
  CHECK(info.outcome == JITCACHE_MISS);
  CHECK(strcmp(info.tier, "compile") == 0);
  CHECK(strlen(info.key) == 64);
  CHECK(info.bytes > 0 || info.compile_ms > 0);
  clReleaseProgram(program);
  CHECK_RC(jitcache_stats(cache, &stats), JITCACHE_OK);
  CHECK(stats.opencl.misses == 1 && stats.opencl.compiles == 1 && stats.opencl.hits == 0);
  jitcache_close(cache);

  cache = open_cache();
  program = NULL;
  CHECK_RC(
      jitcache_cl_build_program(cache, context, device, source, size, options, &program, &info),
      JITCACHE_OK);
  CHECK(info.outcome == JITCACHE_HIT);
  CHECK(strcmp(info.tier, "user") == 0);
  CHECK(program != NULL);
  {
    cl_kernel kernel = clCreateKernel(program, "saxpy", &err);
    CHECK(err == CL_SUCCESS);
    if (kernel)
      clReleaseKernel(kernel);
  }
  clReleaseProgram(program);
  CHECK_RC(jitcache_cl_build_program(cache, context, device, source, size, options, &program, NULL),
           JITCACHE_OK);
  clReleaseProgram(program);
  CHECK_RC(jitcache_stats(cache, &stats), JITCACHE_OK);
  CHECK(stats.opencl.hits == 2 && stats.opencl.memory_hits == 1 && stats.opencl.misses == 0);

  /* A compile error returns the build log. */
  program = NULL;
  CHECK_RC(jitcache_cl_build_program(cache, context, device, k_bad_source, strlen(k_bad_source),
                                     NULL, &program, &info),
           JITCACHE_ERR_COMPILE_FAILED);
  CHECK(program == NULL);
  CHECK(strlen(jitcache_last_error()) > 0);
  CHECK(strstr(jitcache_last_build_log(), "error") != NULL);

  /* Errors are per thread: a thread that fails and one that succeeds, on one handle at once,
   * each see their own. */
  {
    request good = {0}, bad = {0};
    pthread_t a, b;
    good.cache = bad.cache = cache;
    good.context = bad.context = context;
    good.device = bad.device = device;
    good.source = source;
    good.options = options;
    bad.source = k_bad_source;
    CHECK(pthread_create(&a, NULL, run_request, &good) == 0);
    CHECK(pthread_create(&b, NULL, run_request, &bad) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK(good.rc == JITCACHE_OK && !good.saw_error_message && !good.saw_build_log);
    CHECK(bad.rc == JITCACHE_ERR_COMPILE_FAILED && bad.saw_error_message && bad.saw_build_log);
  }

  /* Bad input: an error code, never a crash; outputs untouched. */
  CHECK_RC(jitcache_cl_build_program(NULL, context, device, source, size, NULL, &program, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(jitcache_last_build_log(), "") == 0);
  CHECK_RC(jitcache_cl_build_program(cache, context, device, NULL, size, NULL, &program, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK_RC(jitcache_cl_build_program(cache, context, device, source, 0, NULL, &program, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK_RC(jitcache_cl_build_program(cache, NULL, device, source, size, NULL, &program, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK_RC(jitcache_cl_build_program(cache, context, NULL, source, size, NULL, &program, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK_RC(jitcache_cl_build_program(cache, context, device, source, size, NULL, NULL, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK(program == NULL);

  /* A device that the context does not hold (as one of another platform is not): ctest runs
   * this test with two PoCL devices (POCL_DEVICES), the context holds the first. */
  {
    cl_device_id devices[2];
    cl_uint count = 0;
    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 2, devices, &count);
    if (count == 2) {
      CHECK_RC(jitcache_cl_build_program(cache, context, devices[1], source, size, options,
                                         &program, &info),
               JITCACHE_ERR_INVALID_ARGUMENT);
      CHECK(strstr(jitcache_last_error(), "does not belong") != NULL);
      CHECK(program == NULL);
    } else {
      fprintf(stderr, "note: one OpenCL device only; the foreign-device check is skipped\n");
    }
  }
  jitcache_close(cache);

  /* Explicit settings mean what their variables mean: a read-only cache stores nothing. */
  {
    char ro_dir[300];
    jitcache_settings settings;
    int round;
    snprintf(ro_dir, sizeof ro_dir, "%s/read-only", g_dir);
    settings_in(&settings, ro_dir);
    for (round = 0; round < 2; ++round) {
      settings.read_only = round == 0;
      CHECK_RC(jitcache_open(&settings, &cache), JITCACHE_OK);
      CHECK_RC(
          jitcache_cl_build_program(cache, context, device, source, size, options, &program, &info),
          JITCACHE_OK);
      CHECK(info.outcome == JITCACHE_MISS); /* the read-only round stored nothing */
      clReleaseProgram(program);
      jitcache_close(cache);
    }
  }
  clReleaseContext(context);
  free(source);
}
#else
static void test_opencl(void) {}
#endif

/* ---- CUDA (NVRTC, offline) and HIP (hipRTC, offline) ----------------------------------- */

static int is_elf(const void* binary, size_t size) {
  return size > 4 && memcmp(binary, "\177ELF", 4) == 0;
}

typedef jitcache_error (*compile_fn)(jitcache_cache*, const char*, const jitcache_program*, void**,
                                     size_t*, const char**, jitcache_info*);

/* Compiles `file`'s template instance `expression` for `target` twice (miss then hit), then a
 * compile error and bad inputs. */
static void check_offline(compile_fn compile, const char* target, const char* bad_target,
                          const char* file, const char* expression, const char* bad_source) {
  jitcache_cache* cache = open_cache();
  jitcache_program program;
  jitcache_info info;
  void* binary = NULL;
  size_t binary_size = 0;
  const char* lowered = NULL;
  const char* options[] = {"-I", JITCACHE_KERNELS};
  size_t size;
  char* source = read_file(file, &size);

  memset(&program, 0, sizeof program);
  program.source = source;
  program.source_len = size;
  program.name = file;
  program.options = options;
  program.num_options = 2;
  program.name_expressions = &expression;
  program.num_name_expressions = 1;

  CHECK_RC(compile(cache, target, &program, &binary, &binary_size, &lowered, &info), JITCACHE_OK);
  CHECK(is_elf(binary, binary_size));
  CHECK(info.outcome == JITCACHE_MISS);
  CHECK(info.bytes == binary_size);
  CHECK(lowered != NULL && strncmp(lowered, "_Z", 2) == 0);
  jitcache_free(binary);
  binary = NULL;
  lowered = NULL;
  CHECK_RC(compile(cache, target, &program, &binary, &binary_size, &lowered, &info), JITCACHE_OK);
  CHECK(info.outcome == JITCACHE_HIT);
  CHECK(is_elf(binary, binary_size));
  CHECK(lowered != NULL && strncmp(lowered, "_Z", 2) == 0);
  jitcache_free(binary);
  binary = NULL;

  CHECK(compile(cache, bad_target, &program, &binary, &binary_size, NULL, &info) != JITCACHE_OK);
  CHECK(strlen(jitcache_last_error()) > 0);
  CHECK(binary == NULL);

  program.source = bad_source;
  program.source_len = strlen(bad_source);
  program.num_name_expressions = 0;
  CHECK_RC(compile(cache, target, &program, &binary, &binary_size, NULL, &info),
           JITCACHE_ERR_COMPILE_FAILED);
  CHECK(strstr(jitcache_last_build_log(), "error") != NULL);

  program.source_len = 0;
  CHECK_RC(compile(cache, target, &program, &binary, &binary_size, NULL, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  program.source = NULL;
  CHECK_RC(compile(cache, target, &program, &binary, &binary_size, NULL, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK_RC(compile(cache, target, NULL, &binary, &binary_size, NULL, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK_RC(compile(NULL, target, &program, &binary, &binary_size, NULL, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK_RC(compile(cache, NULL, &program, &binary, &binary_size, NULL, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  program.source = source;
  program.source_len = size;
  program.options = NULL; /* with num_options 2 */
  CHECK_RC(compile(cache, target, &program, &binary, &binary_size, NULL, &info),
           JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK(binary == NULL);
  jitcache_close(cache);
  free(source);
}

static void test_cuda(void) {
  jitcache_cache* cache;
  jitcache_program program;
  struct CUmod_st* module = NULL;
  const char* source = "extern \"C\" __global__ void k(float* x) { x[0] = 1; }";
  check_offline(jitcache_cuda_compile, "sm_80", "sm_1", "scale.cu", "scale<float, 4>",
                "__global__ void broken(float* x) { x[0] = ; }");

  /* Loading needs a driver and a GPU: without them, an error code (never a crash). */
  cache = open_cache();
  memset(&program, 0, sizeof program);
  program.source = source;
  program.source_len = strlen(source);
  {
    jitcache_error rc = jitcache_cuda_load_module(cache, &program, &module, NULL, NULL);
    CHECK(rc != JITCACHE_ERR_INTERNAL);
    CHECK(rc == JITCACHE_OK ? module != NULL : module == NULL);
  }
  CHECK_RC(jitcache_cuda_load_module(cache, NULL, &module, NULL, NULL),
           JITCACHE_ERR_INVALID_ARGUMENT);
  CHECK_RC(jitcache_cuda_load_module(NULL, &program, &module, NULL, NULL),
           JITCACHE_ERR_INVALID_ARGUMENT);
  jitcache_close(cache);
}

static void test_hip(void) {
  jitcache_cache* cache;
  jitcache_program program;
  struct ihipModule_t* module = NULL;
  const char* source = "extern \"C\" __global__ void k(float* x) { x[0] = 1; }";
  check_offline(jitcache_hip_compile, "gfx90a", "gfx9999", "axpy_template.hip", "axpy<float>",
                "__global__ void broken(float* x) { x[0] = ; }");

  /* Loading needs an AMD GPU: without one, an error code (never a crash or an abort). */
  cache = open_cache();
  memset(&program, 0, sizeof program);
  program.source = source;
  program.source_len = strlen(source);
  {
    jitcache_error rc = jitcache_hip_load_module(cache, &program, &module, NULL, NULL);
    CHECK(rc != JITCACHE_ERR_INTERNAL);
    CHECK(rc == JITCACHE_OK ? module != NULL : module == NULL);
  }
  CHECK_RC(jitcache_hip_load_module(cache, &program, NULL, NULL, NULL),
           JITCACHE_ERR_INVALID_ARGUMENT);
  jitcache_close(cache);
}

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "common";
  make_temp_dir();
  if (strcmp(what, "common") == 0)
    test_common();
  else if (strcmp(what, "opencl") == 0)
    test_opencl();
  else if (strcmp(what, "cuda") == 0)
    test_cuda();
  else if (strcmp(what, "hip") == 0)
    test_hip();
  else {
    fprintf(stderr, "usage: c_api_test common|opencl|cuda|hip\n");
    return 2;
  }
  remove_temp_dir();
  if (g_failures)
    fprintf(stderr, "%d check(s) failed\n", g_failures);
  return g_failures ? 1 : 0;
}
