/* A C program that compiles the sample kernels with NVRTC (or, built with RTC_HIP, hipRTC) and
 * writes every answer it gets into a dump: each call's result, each output's size and bytes, the
 * log, the lowered names. Run with and without a jitcache front-end, the dumps must be equal.
 *
 *   rtc_client link|handle|global KERNELS HEADERS_DIR TOOLKIT_INCLUDE DUMP
 *
 * link: the runtime's functions as linked; handle: dlopen(RTC_SONAME) and dlsym on its handle;
 * global: dlopen(RTC_SONAME, RTLD_GLOBAL) and dlsym(RTLD_DEFAULT) (cuda.core's way).
 * HEADERS_DIR holds rtc_test_helper.h (an include path's file). RTC_ARCH=T: every program
 * compiles for target T instead of its own.
 * First the calls that depend on the runtime's library alone (its version; NVRTC: its archs),
 * as applications make them at their start. RTC_LOADED=FILE: then writes into FILE the path of
 * each mapped file named like the real runtime's library (RTC_SONAME up to ".so"), one a line:
 * whether anything had opened it by then. Then the same calls with null pointers (the runtime's
 * own errors, which a front-end gets from the runtime). RTC_LIBRARY_ONLY=1: those calls alone,
 * no program (and the version asked again during exit, as always). RTC_AT_EXIT=1: no call at
 * the start; the programs, then one more kept until exit, where (as a global object's destructor
 * would) its outputs are read, it is destroyed and the version asked, answers appended to the
 * dump. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/read_whole_file.h"

#ifdef RTC_HIP
#include <hip/hiprtc.h>
#define RTC(name) hiprtc##name
typedef hiprtcResult Result;
typedef hiprtcProgram Program;
#define RTC_OUTPUTS(X) X(Code) X(ProgramLog)
#define RTC_TARGET_FLAG "--offload-arch="
typedef const char** Strings;
#else
#include <nvrtc.h>
#define RTC(name) nvrtc##name
typedef nvrtcResult Result;
typedef nvrtcProgram Program;
#define RTC_OUTPUTS(X) X(PTX) X(CUBIN) X(LTOIR) X(OptiXIR) X(ProgramLog)
#define RTC_TARGET_FLAG "-arch="
typedef const char* const* Strings;
#endif

#define RTC_STR2(x) #x
#define RTC_STR(x) RTC_STR2(x)

static struct {
  Result (*Version)(int*, int*);
#ifndef RTC_HIP
  Result (*GetNumSupportedArchs)(int*);
  Result (*GetSupportedArchs)(int*);
#endif
  Result (*CreateProgram)(Program*, const char*, const char*, int, Strings, Strings);
  Result (*DestroyProgram)(Program*);
  Result (*AddNameExpression)(Program, const char*);
  Result (*CompileProgram)(Program, int, Strings);
  Result (*GetLoweredName)(Program, const char*, const char**);
#ifndef RTC_HIP
  Result (*GetPCHCreateStatus)(Program);
#endif
#define RTC_OUTPUT_MEMBERS(Name)                                                                   \
  Result (*Get##Name##Size)(Program, size_t*);                                                     \
  Result (*Get##Name)(Program, char*);
  RTC_OUTPUTS(RTC_OUTPUT_MEMBERS)
} api;

static void* symbol(void* handle, const char* name) {
  void* found = dlsym(handle, name);
  if (!found) {
    fprintf(stderr, "no %s: %s\n", name, dlerror());
    exit(2);
  }
  return found;
}

static void load(const char* mode) {
  if (strcmp(mode, "link") == 0) {
    api.Version = &RTC(Version);
#ifndef RTC_HIP
    api.GetNumSupportedArchs = &nvrtcGetNumSupportedArchs;
    api.GetSupportedArchs = &nvrtcGetSupportedArchs;
#endif
    api.CreateProgram = (void*)&RTC(CreateProgram);
    api.DestroyProgram = &RTC(DestroyProgram);
    api.AddNameExpression = (void*)&RTC(AddNameExpression);
    api.CompileProgram = (void*)&RTC(CompileProgram);
    api.GetLoweredName = (void*)&RTC(GetLoweredName);
#ifndef RTC_HIP
    api.GetPCHCreateStatus = &nvrtcGetPCHCreateStatus;
#endif
#define RTC_LINK(Name)                                                                             \
  api.Get##Name##Size = &RTC(Get##Name##Size);                                                     \
  api.Get##Name = &RTC(Get##Name);
    RTC_OUTPUTS(RTC_LINK)
    return;
  }
  const int global = strcmp(mode, "global") == 0;
  void* library = dlopen(RTC_SONAME, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (!library) {
    fprintf(stderr, "dlopen %s: %s\n", RTC_SONAME, dlerror());
    exit(2);
  }
  void* handle = global ? RTLD_DEFAULT : library;
#define RTC_NAME(name) RTC_STR(RTC(name))
  api.Version = symbol(handle, RTC_NAME(Version));
#ifndef RTC_HIP
  api.GetNumSupportedArchs = symbol(handle, "nvrtcGetNumSupportedArchs");
  api.GetSupportedArchs = symbol(handle, "nvrtcGetSupportedArchs");
#endif
  api.CreateProgram = symbol(handle, RTC_NAME(CreateProgram));
  api.DestroyProgram = symbol(handle, RTC_NAME(DestroyProgram));
  api.AddNameExpression = symbol(handle, RTC_NAME(AddNameExpression));
  api.CompileProgram = symbol(handle, RTC_NAME(CompileProgram));
  api.GetLoweredName = symbol(handle, RTC_NAME(GetLoweredName));
#ifndef RTC_HIP
  api.GetPCHCreateStatus = symbol(handle, "nvrtcGetPCHCreateStatus");
#endif
#define RTC_DLSYM(Name)                                                                            \
  api.Get##Name##Size = symbol(handle, RTC_NAME(Get##Name##Size));                                 \
  api.Get##Name = symbol(handle, RTC_NAME(Get##Name));
  RTC_OUTPUTS(RTC_DLSYM)
}

/* The files read, freed before the program ends (the leak check of the sanitized build). */
static char* files_read[16];
static int files_count;

static char* read_file(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char* text = read_whole_file(path);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(2);
  }
  if (files_count < 16)
    files_read[files_count++] = text;
  return text;
}

static FILE* dump;

/* Writes into `report` the mapped files named like the real runtime's library. */
static void report_loaded(const char* report) {
  FILE* out = fopen(report, "w");
  FILE* maps = fopen("/proc/self/maps", "r");
  if (!out || !maps)
    exit(2);
  const size_t stem = (size_t)(strstr(RTC_SONAME, ".so") - RTC_SONAME) + 3;
  char line[8192];
  while (fgets(line, sizeof line, maps)) {
    const char* path = strchr(line, '/');
    const char* base = path ? strrchr(path, '/') + 1 : NULL;
    if (base && strncmp(base, RTC_SONAME, stem) == 0)
      fputs(path, out);
  }
  fclose(maps);
  fclose(out);
}

/* The version as first answered, and the same call during exit (registered before the runtime
 * or a front-end is called, so it runs after their destructors): the same answer, or exit 3. */
static Result first_rc;
static int first_major = -1, first_minor = -1;
static void ask_again_during_exit(void) {
  int major = -1, minor = -1;
  const Result rc = api.Version(&major, &minor);
  if (rc != first_rc || major != first_major || minor != first_minor) {
    fprintf(stderr, "the version during exit: %d %d.%d, first %d %d.%d\n", (int)rc, major, minor,
            (int)first_rc, first_major, first_minor);
    _exit(3);
  }
}

/* RTC_AT_EXIT: a program compiled in main and kept, as a global object would keep it; during
 * exit (registered before the runtime or a front-end is called, so that it runs after their
 * destructors) its outputs are read and it is destroyed, as that object's destructor would, and
 * the version asked, every answer appended to the dump. (A compile during exit is left out: the
 * real NVRTC itself crashes in one.) */
static const char* dump_path;
static Program kept;
static void dump_outputs(Program program);
static void use_kept_during_exit(void) {
  if (!(dump = fopen(dump_path, "ab")))
    _exit(4);
  fputs("== during exit\n", dump);
  dump_outputs(kept);
  fprintf(dump, "destroy %d\n", (int)api.DestroyProgram(&kept));
  int major = -1, minor = -1;
  const Result rc = api.Version(&major, &minor);
  fprintf(dump, "version %d %d.%d\n", (int)rc, major, minor);
  fclose(dump);
}

/* The library's answers into the dump, then (RTC_LOADED) the real library's mapped files, then
 * the calls with null pointers. */
static void ask_library(void) {
  Result rc = first_rc = api.Version(&first_major, &first_minor);
  fprintf(dump, "version %d %d.%d\n", (int)rc, first_major, first_minor);
#ifndef RTC_HIP
  int count = -1;
  rc = api.GetNumSupportedArchs(&count);
  fprintf(dump, "archs %d %d", (int)rc, count);
  if (rc == 0 && count > 0) {
    int* archs = malloc(sizeof(int) * (size_t)count);
    fprintf(dump, " %d", (int)api.GetSupportedArchs(archs));
    for (int i = 0; i < count; ++i)
      fprintf(dump, " %d", archs[i]);
    free(archs);
  }
  fputc('\n', dump);
#endif
  const char* report = getenv("RTC_LOADED");
  if (report)
    report_loaded(report);
  fprintf(dump, "version null %d\n", (int)api.Version(NULL, NULL));
#ifndef RTC_HIP
  fprintf(dump, "archs null %d %d\n", (int)api.GetNumSupportedArchs(NULL),
          (int)api.GetSupportedArchs(NULL));
#endif
}

/* Each output's size and bytes, into the dump. */
static void dump_outputs(Program program) {
#define RTC_DUMP(Name)                                                                             \
  {                                                                                                \
    size_t size = 0;                                                                               \
    const Result size_rc = api.Get##Name##Size(program, &size);                                    \
    fprintf(dump, "%s size %d %zu", #Name, (int)size_rc, size);                                    \
    if (size_rc == 0) {                                                                            \
      char* bytes = malloc(size + 1);                                                              \
      const Result get_rc = api.Get##Name(program, bytes);                                         \
      fprintf(dump, " get %d\n", (int)get_rc);                                                     \
      if (get_rc == 0)                                                                             \
        fwrite(bytes, 1, size, dump);                                                              \
      free(bytes);                                                                                 \
    }                                                                                              \
    fputc('\n', dump);                                                                             \
  }
  RTC_OUTPUTS(RTC_DUMP)
}

/* One program: created with `headers` in memory, `expressions` added, compiled with `options`;
 * every answer written to the dump. */
static void build(const char* name, const char* source, int headers, const char** contents,
                  const char** names, int expressions, const char** expression, int options,
                  const char** option) {
  /* RTC_ARCH, when set, replaces the target each program names: the application run for
   * another target. */
  const char* arch = getenv("RTC_ARCH");
  char target[256];
  const char* changed[16];
  for (int i = 0; i < options && i < 16; ++i) {
    changed[i] = option[i];
    if (arch && strncmp(option[i], RTC_TARGET_FLAG, strlen(RTC_TARGET_FLAG)) == 0) {
      snprintf(target, sizeof target, "%s%s", RTC_TARGET_FLAG, arch);
      changed[i] = target;
    }
  }
  option = changed;
  Program program = NULL;
  Result rc = api.CreateProgram(&program, source, name, headers, (Strings)contents, (Strings)names);
  fprintf(dump, "== %s\ncreate %d\n", name, (int)rc);
  if (rc != 0)
    return;
  for (int i = 0; i < expressions; ++i)
    fprintf(dump, "add %s %d\n", expression[i], (int)api.AddNameExpression(program, expression[i]));
  fprintf(dump, "compile %d\n", (int)api.CompileProgram(program, options, (Strings)option));
  dump_outputs(program);
  for (int i = 0; i < expressions; ++i) {
    const char* lowered = NULL;
    rc = api.GetLoweredName(program, expression[i], &lowered);
    fprintf(dump, "lowered %s %d %s\n", expression[i], (int)rc, rc == 0 ? lowered : "");
  }
  /* Calls a stored answer cannot give: a name expression never added, and (NVRTC) a call the
   * front-end does not model; the real runtime answers them, on the program as compiled (on the
   * first program only: each such call compiles it again under the front-end). */
  static int probes = 1;
  if (probes-- > 0) {
    const char* lowered = NULL;
    rc = api.GetLoweredName(program, "not_added<int>", &lowered);
    fprintf(dump, "lowered not_added<int> %d %s\n", (int)rc, rc == 0 ? lowered : "");
#ifndef RTC_HIP
    fprintf(dump, "pch status %d\n", (int)api.GetPCHCreateStatus(program));
#endif
  }
  fprintf(dump, "destroy %d\n", (int)api.DestroyProgram(&program));
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr,
            "usage: rtc_client link|handle|global KERNELS HEADERS_DIR TOOLKIT_INCLUDE DUMP\n");
    return 2;
  }
  load(argv[1]);
  const int at_exit = getenv("RTC_AT_EXIT") != NULL;
  dump_path = argv[5];
  atexit(at_exit ? use_kept_during_exit : ask_again_during_exit);
  const char* kernels = argv[2];
  char include_headers[4096], include_toolkit[4096], include_cccl[4096];
  snprintf(include_headers, sizeof include_headers, "-I%s", argv[3]);
  snprintf(include_toolkit, sizeof include_toolkit, "-I%s", argv[4]);
  snprintf(include_cccl, sizeof include_cccl, "-I%s/cccl", argv[4]);
  if (!(dump = fopen(argv[5], "wb")))
    return 2;
  if (!at_exit)
    ask_library();
  if (getenv("RTC_LIBRARY_ONLY")) { /* no program: nothing else may open the runtime */
    fclose(dump);
    return 0;
  }
  const char* helper =
      "#include \"rtc_test_helper.h\"\n"
      "extern \"C\" __global__ void twice(float* x) { x[0] = helper_twice(x[0]); }\n";
  const char* broken = "extern \"C\" __global__ void broken(float* x) { x[0] = undeclared; }\n";
#ifdef RTC_HIP
  {
    const char* options[] = {"--offload-arch=gfx90a", "-O3"};
    build("saxpy.hip", read_file(kernels, "saxpy.hip"), 0, NULL, NULL, 0, NULL, 2, options);
  }
  {
    const char* expressions[] = {"axpy<float>", "axpy<double>"};
    const char* options[] = {"--offload-arch=gfx1030"};
    build("axpy_template.hip", read_file(kernels, "axpy_template.hip"), 0, NULL, NULL, 2,
          expressions, 1, options);
  }
  {
    const char* names[] = {"extra.h"};
    const char* contents[] = {"#define EXTRA 3\n"};
    const char* source =
        "#include <hip/hip_runtime.h>\n#include \"extra.h\"\n"
        "#include \"rtc_test_helper.h\"\n"
        "extern \"C\" __global__ void twice(float* x) { x[0] = helper_twice(x[0]) + EXTRA; }\n";
    const char* options[] = {"--offload-arch=gfx90a", include_headers};
    build("helper.hip", source, 1, contents, names, 0, NULL, 2, options);
  }
  {
    const char* options[] = {"--offload-arch=gfx90a"};
    build("broken.hip", broken, 0, NULL, NULL, 0, NULL, 1, options);
  }
  (void)helper;
  (void)include_toolkit;
  (void)include_cccl;
#else
  {
    const char* names[] = {"cuda_common.cuh"};
    const char* contents[] = {read_file(kernels, "cuda_common.cuh")};
    const char* options[] = {"-arch=sm_80"};
    build("saxpy.cu", read_file(kernels, "saxpy.cu"), 1, contents, names, 0, NULL, 1, options);
  }
  {
    char include_kernels[4096];
    snprintf(include_kernels, sizeof include_kernels, "--include-path=%s", kernels);
    const char* expressions[] = {"scale<float, 4>", "scale<double, 2>"};
    const char* options[] = {"-arch=sm_90", include_kernels, "-std=c++17"};
    build("scale.cu", read_file(kernels, "scale.cu"), 0, NULL, NULL, 2, expressions, 3, options);
  }
  {
    /* PTX only (no CUBIN), the toolkit's include folders given (a heavy compile, CUB's
     * block_reduce.cu, is left to the benchmark: here its time would be the test's). */
    const char* names[] = {"cuda_common.cuh"};
    const char* contents[] = {read_file(kernels, "cuda_common.cuh")};
    const char* options[] = {"-arch=compute_90", include_cccl, include_toolkit};
    build("saxpy_ptx.cu", read_file(kernels, "saxpy.cu"), 1, contents, names, 0, NULL, 3, options);
  }
  {
    const char* options[] = {"-arch=sm_90", "-dlto", "-I", argv[3]};
    build("helper.cu", helper, 0, NULL, NULL, 0, NULL, 4, options);
  }
  {
    const char* options[] = {"-arch=sm_80"};
    build("broken.cu", broken, 0, NULL, NULL, 0, NULL, 1, options);
  }
  (void)include_headers;
#endif
  if (at_exit) { /* the program kept until exit */
#ifdef RTC_HIP
    const char* source = read_file(kernels, "saxpy.hip");
    const char* options[] = {"--offload-arch=gfx90a"};
#else
    const char* source = read_file(kernels, "saxpy.cu");
    const char* options[] = {"-arch=sm_80"};
#endif
    const char* names[] = {"cuda_common.cuh"};
    const char* contents[] = {read_file(kernels, "cuda_common.cuh")};
    fprintf(dump, "== kept\ncreate %d\n",
            (int)api.CreateProgram(&kept, source, "kept", 1, (Strings)contents, (Strings)names));
    fprintf(dump, "compile %d\n", (int)api.CompileProgram(kept, 1, (Strings)options));
  }
  fclose(dump);
  while (files_count > 0)
    free(files_read[--files_count]);
  return 0;
}
