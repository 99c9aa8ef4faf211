/* One compile as an application makes it, timed: create-program (the kernel's headers given in
 * memory), the name expressions added, compile, get the binary's size and bytes (NVRTC: CUBIN;
 * built with RTC_HIP, hipRTC: the code object), destroy. Linked with the runtime; run with and
 * without a jitcache front-end (LD_PRELOAD or its folder first on LD_LIBRARY_PATH).
 *
 *   rtc_bench KERNEL_FILE ARCH_OPTION [-I DIR | NAME_EXPRESSION]...
 *
 * Prints {"ms": <the create .. destroy calls>, "again_ms": <the same calls made again in the
 * process>, "bytes": <binary size>} on one line. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static char* read_file(const char* path) {
  FILE* in = fopen(path, "rb");
  if (!in)
    exit(2);
  fseek(in, 0, SEEK_END);
  const long size = ftell(in);
  fseek(in, 0, SEEK_SET);
  char* text = calloc((size_t)size + 1, 1);
  if (fread(text, 1, (size_t)size, in) != (size_t)size)
    exit(2);
  fclose(in);
  return text;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static size_t compile_once(const char* source, const char* name, int n_options,
                           const char** options, int n_expressions, const char** expressions) {
  Program program = NULL;
  if (RTC(CreateProgram)(&program, source, name, 0, NULL, NULL) != 0)
    exit(1);
  for (int i = 0; i < n_expressions; ++i)
    RTC(AddNameExpression)(program, expressions[i]);
  if (RTC(CompileProgram)(program, n_options, (Strings)options) != 0) {
    fprintf(stderr, "compile failed\n");
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

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: rtc_bench KERNEL_FILE ARCH_OPTION [-I DIR | NAME_EXPRESSION]...\n");
    return 2;
  }
  const char* source = read_file(argv[1]);
  const char* name = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
  const char* options[64];
  const char* expressions[64];
  int n_options = 0, n_expressions = 0;
  options[n_options++] = argv[2];
  for (int i = 3; i < argc && n_options < 63 && n_expressions < 64; ++i)
    if (strcmp(argv[i], "-I") == 0 && i + 1 < argc) {
      options[n_options++] = argv[i];
      options[n_options++] = argv[++i];
    } else {
      expressions[n_expressions++] = argv[i];
    }

  const double start = now_ms();
  const size_t size = compile_once(source, name, n_options, options, n_expressions, expressions);
  const double ms = now_ms() - start;
  const double again = now_ms();
  compile_once(source, name, n_options, options, n_expressions, expressions);
  const double again_ms = now_ms() - again;
  printf("{\"ms\": %.4f, \"again_ms\": %.4f, \"bytes\": %zu}\n", ms, again_ms, size);
  return 0;
}
