/* Compiles as an application does, timed: create-program, the name expressions added, compile,
 * get the binary's size and bytes (NVRTC: CUBIN; built with RTC_HIP, hipRTC: the code object),
 * the lowered names, destroy. Linked with the runtime; run with and without a jitcache front-end
 * (LD_PRELOAD or its folder first on LD_LIBRARY_PATH).
 *
 *   rtc_bench [--no-version] [--many N] KERNEL_FILE ARCH_OPTION
 *             [-I DIR | -OPTION | NAME_EXPRESSION]...
 *
 * First the runtime's version, as applications ask it (CuPy does at its start), timed:
 * "version_ms" in each line below (0 with --no-version, which asks nothing before the programs).
 * Linked, the raw runtime was loaded before main; a front-end answers it from what it remembers
 * (opening its user tier) or from the real library it opens.
 *
 * One program: prints {"version_ms": <as above>, "ms": <the create .. destroy calls>,
 * "again_ms": <the same calls made again in the process>, "bytes": <binary size>, "end_ms":
 * <CLOCK_MONOTONIC when main returns, so that the caller can time the exit (a front-end's work
 * at exit)>} on one line.
 * --many N: N programs in one process, as a CuPy program makes them: each one's source (and
 * name expressions) the file's with every "@N@" replaced by the program's number, so that each
 * is distinct. Prints {"ms": <all N>, "first_ms": <the first>, "bytes": <all binaries>,
 * "end_ms": <as above>}. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/support/read_whole_file.h"

#ifdef RTC_HIP
#include <hip/hiprtc.h>
#define RTC(name) hiprtc##name
#define GetBinarySize hiprtcGetCodeSize
#define GetBinary hiprtcGetCode
typedef hiprtcProgram Program;
typedef const char** Strings;
#else
#include <nvrtc.h>
#define RTC(name) nvrtc##name
#define GetBinarySize nvrtcGetCUBINSize
#define GetBinary nvrtcGetCUBIN
typedef nvrtcProgram Program;
typedef const char* const* Strings;
#endif

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* `text` with every "@N@" replaced by `number`, in memory the caller frees. */
static char* numbered(const char* text, int number) {
  char digits[16];
  snprintf(digits, sizeof digits, "%d", number);
  size_t count = 0;
  for (const char* at = text; (at = strstr(at, "@N@")); at += 3)
    ++count;
  char* out = malloc(strlen(text) + count * strlen(digits) + 1);
  char* to = out;
  for (const char* at; (at = strstr(text, "@N@")); text = at + 3) {
    memcpy(to, text, (size_t)(at - text));
    to += at - text;
    memcpy(to, digits, strlen(digits));
    to += strlen(digits);
  }
  strcpy(to, text);
  return out;
}

static size_t compile_once(const char* source, const char* name, int n_options,
                           const char** options, int n_expressions, const char** expressions) {
  Program program = NULL;
  if (RTC(CreateProgram)(&program, source, name, 0, NULL, NULL) != 0)
    exit(1);
  for (int i = 0; i < n_expressions; ++i)
    RTC(AddNameExpression)(program, expressions[i]);
  if (RTC(CompileProgram)(program, n_options, (Strings)options) != 0) {
    size_t size = 0;
    RTC(GetProgramLogSize)(program, &size);
    char* log = calloc(size + 1, 1);
    RTC(GetProgramLog)(program, log);
    fprintf(stderr, "compile failed:\n%s\n", log);
    exit(1);
  }
  size_t size = 0;
  if (GetBinarySize(program, &size) != 0)
    exit(1);
  char* binary = malloc(size);
  if (GetBinary(program, binary) != 0)
    exit(1);
  for (int i = 0; i < n_expressions; ++i) {
    const char* lowered = NULL;
    RTC(GetLoweredName)(program, expressions[i], &lowered);
  }
  RTC(DestroyProgram)(&program);
  free(binary);
  return size;
}

/* --many: `count` distinct programs made from `source`, timed. */
static void compile_many(double version_ms, int count, const char* source, const char* name,
                         int n_options, const char** options, int n_expressions,
                         const char** expressions) {
  double ms = 0, first_ms = 0;
  size_t bytes = 0;
  for (int k = 0; k < count; ++k) {
    char* text = numbered(source, k);
    char* numbered_expressions[64];
    for (int i = 0; i < n_expressions; ++i)
      numbered_expressions[i] = numbered(expressions[i], k);
    const double start = now_ms();
    bytes += compile_once(text, name, n_options, options, n_expressions,
                          (const char**)numbered_expressions);
    const double took = now_ms() - start;
    ms += took;
    if (k == 0)
      first_ms = took;
    for (int i = 0; i < n_expressions; ++i)
      free(numbered_expressions[i]);
    free(text);
  }
  printf("{\"version_ms\": %.4f, \"ms\": %.4f, \"first_ms\": %.4f, \"bytes\": %zu, "
         "\"end_ms\": %.4f}\n",
         version_ms, ms, first_ms, bytes, now_ms());
}

int main(int argc, char** argv) {
  int many = 0, ask_version = 1;
  if (argc > 1 && strcmp(argv[1], "--no-version") == 0) {
    ask_version = 0;
    ++argv;
    --argc;
  }
  if (argc > 2 && strcmp(argv[1], "--many") == 0) {
    many = atoi(argv[2]);
    argv += 2;
    argc -= 2;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: rtc_bench [--no-version] [--many N] KERNEL_FILE ARCH_OPTION "
                    "[-I DIR | -OPTION | NAME_EXPRESSION]...\n");
    return 2;
  }
  char* source = read_whole_file(argv[1]);
  if (!source) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  const char* name = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
  const char* options[64];
  const char* expressions[64];
  int n_options = 0, n_expressions = 0;
  options[n_options++] = argv[2];
  for (int i = 3; i < argc && n_options < 63 && n_expressions < 64; ++i)
    if (strcmp(argv[i], "-I") == 0 && i + 1 < argc) {
      options[n_options++] = argv[i];
      options[n_options++] = argv[++i];
    } else if (argv[i][0] == '-') {
      options[n_options++] = argv[i];
    } else {
      expressions[n_expressions++] = argv[i];
    }

  int major = 0, minor = 0;
  const double asked = now_ms();
  if (ask_version)
    RTC(Version)(&major, &minor);
  const double version_ms = now_ms() - asked;
  if (many > 0) {
    compile_many(version_ms, many, source, name, n_options, options, n_expressions, expressions);
  } else {
    const double start = now_ms();
    const size_t size = compile_once(source, name, n_options, options, n_expressions, expressions);
    const double ms = now_ms() - start;
    const double again = now_ms();
    compile_once(source, name, n_options, options, n_expressions, expressions);
    const double again_ms = now_ms() - again;
    free(source);
    printf("{\"version_ms\": %.4f, \"ms\": %.4f, \"again_ms\": %.4f, \"bytes\": %zu, "
           "\"end_ms\": %.4f}\n",
           version_ms, ms, again_ms, size, now_ms());
    return 0;
  }
  free(source);
  return 0;
}
