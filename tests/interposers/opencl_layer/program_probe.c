/* Builds a few programs from source and prints every answer the OpenCL runtime gives about them
 * (program and build info, kernels, reference counts, results), one per line, so that a run
 * under the jitcache OpenCL layer can be compared with a run without it, line for line. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cl_context context;
static cl_device_id device;
static cl_command_queue queue;

static void check(cl_int rc, const char* what) {
  if (rc != CL_SUCCESS) {
    printf("FAILED %s: %d\n", what, rc);
    exit(1);
  }
}

/* Text as one line: control characters escaped. */
static void print_text(const char* label, const char* text, size_t size) {
  printf("%s [%zu] ", label, size);
  for (size_t i = 0; i < size && text[i]; ++i) {
    unsigned char c = (unsigned char)text[i];
    if (c == '\n')
      printf("\\n");
    else if (c < 32)
      printf("\\x%02x", c);
    else
      putchar(c);
  }
  putchar('\n');
}

static uint64_t fnv(const unsigned char* bytes, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i)
    h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

static void program_string(cl_program program, cl_program_info param, const char* label) {
  size_t size = 0;
  cl_int rc = clGetProgramInfo(program, param, 0, NULL, &size);
  if (rc != CL_SUCCESS) {
    printf("%s rc %d\n", label, rc);
    return;
  }
  char* text = calloc(size + 1, 1);
  check(clGetProgramInfo(program, param, size, text, NULL), label);
  print_text(label, text, size);
  free(text);
}

static void build_string(cl_program program, cl_program_build_info param, const char* label) {
  size_t size = 0;
  cl_int rc = clGetProgramBuildInfo(program, device, param, 0, NULL, &size);
  if (rc != CL_SUCCESS) {
    printf("%s rc %d\n", label, rc);
    return;
  }
  char* text = calloc(size + 1, 1);
  check(clGetProgramBuildInfo(program, device, param, size, text, NULL), label);
  print_text(label, text, size);
  /* Into a buffer one byte short: refused when the answer does not fit (the size asked with it
     is left alone). */
  size_t asked = 12345;
  rc = clGetProgramBuildInfo(program, device, param, size - 1, size > 1 ? text : NULL, &asked);
  printf("%s into %zu bytes: rc %d, size %s\n", label, size - 1, rc,
         asked == size    ? "told"
         : asked == 12345 ? "untouched"
                          : "other");
  free(text);
}

static cl_uint reference_count(cl_program program) {
  cl_uint count = 0;
  check(clGetProgramInfo(program, CL_PROGRAM_REFERENCE_COUNT, sizeof count, &count, NULL),
        "CL_PROGRAM_REFERENCE_COUNT");
  return count;
}

static void program_info(cl_program program, const char* when) {
  printf("-- %s\n", when);
  printf("reference count %u\n", reference_count(program));
  cl_context c = NULL;
  check(clGetProgramInfo(program, CL_PROGRAM_CONTEXT, sizeof c, &c, NULL), "CL_PROGRAM_CONTEXT");
  printf("context is the application's: %d\n", c == context);
  cl_uint devices = 0;
  check(clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof devices, &devices, NULL),
        "CL_PROGRAM_NUM_DEVICES");
  cl_device_id d = NULL;
  check(clGetProgramInfo(program, CL_PROGRAM_DEVICES, sizeof d, &d, NULL), "CL_PROGRAM_DEVICES");
  printf("devices %u, the application's: %d\n", devices, d == device);
  program_string(program, CL_PROGRAM_SOURCE, "source");
  size_t kernels = 0;
  cl_int rc = clGetProgramInfo(program, CL_PROGRAM_NUM_KERNELS, sizeof kernels, &kernels, NULL);
  printf("num kernels rc %d: %zu\n", rc, rc == CL_SUCCESS ? kernels : 0);
  program_string(program, CL_PROGRAM_KERNEL_NAMES, "kernel names");
  size_t binary_size = 0;
  rc = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof binary_size, &binary_size, NULL);
  printf("binary sizes rc %d, has a binary: %d\n", rc, binary_size > 0);
  if (binary_size > 0) {
    unsigned char* binary = malloc(binary_size);
    check(clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binary, &binary, NULL),
          "CL_PROGRAM_BINARIES");
    if (getenv("PROBE_BINARY_DIGEST"))
      printf("binary digest %016llx\n", (unsigned long long)fnv(binary, binary_size));
    free(binary);
  }
  cl_build_status status = 0;
  check(
      clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, NULL),
      "CL_PROGRAM_BUILD_STATUS");
  printf("build status %d\n", status);
  build_string(program, CL_PROGRAM_BUILD_OPTIONS, "build options");
  build_string(program, CL_PROGRAM_BUILD_LOG, "build log");
  cl_program_binary_type type = 0;
  rc = clGetProgramBuildInfo(program, device, CL_PROGRAM_BINARY_TYPE, sizeof type, &type, NULL);
  printf("binary type rc %d: %u\n", rc, (unsigned)type);
}

static cl_program create(const char* source) {
  cl_int rc = CL_SUCCESS;
  /* In two strings, one with a length and one NUL-terminated. */
  const size_t half = strlen(source) / 2;
  const char* strings[2] = {source, source + half};
  const size_t lengths[2] = {half, 0};
  cl_program program = clCreateProgramWithSource(context, 2, strings, lengths, &rc);
  check(rc, "clCreateProgramWithSource");
  return program;
}

static const char* k_scale =
    "#ifndef SCALE\n#error SCALE is needed\n#endif\n"
    "kernel void scale(global float* x) { size_t i = get_global_id(0); x[i] = x[i] * SCALE; }\n"
    "kernel void add(global float* x, float y) { x[get_global_id(0)] += y; }\n";
static const char* k_warning =
    "#warning this program warns\nkernel void warns(global int* x) { x[get_global_id(0)] = 7; }\n";
static const char* k_broken = "kernel void broken(global int* x) { x[0] = undefined_name; }\n";
static const char* k_header = "#define OFFSET 5\n";
static const char* k_uses_header =
    "#include \"offset.h\"\nkernel void offset(global int* x) { x[get_global_id(0)] += OFFSET; }\n";

static void run_scale(cl_kernel scale, cl_kernel add) {
  float values[16];
  for (int i = 0; i < 16; ++i)
    values[i] = (float)i;
  cl_int rc = CL_SUCCESS;
  cl_mem buffer =
      clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof values, values, &rc);
  check(rc, "clCreateBuffer");
  const float y = 0.5f;
  check(clSetKernelArg(scale, 0, sizeof buffer, &buffer), "clSetKernelArg");
  check(clSetKernelArg(add, 0, sizeof buffer, &buffer), "clSetKernelArg");
  check(clSetKernelArg(add, 1, sizeof y, &y), "clSetKernelArg");
  const size_t global = 16;
  check(clEnqueueNDRangeKernel(queue, scale, 1, NULL, &global, NULL, 0, NULL, NULL), "scale");
  check(clEnqueueNDRangeKernel(queue, add, 1, NULL, &global, NULL, 0, NULL, NULL), "add");
  check(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, sizeof values, values, 0, NULL, NULL),
        "clEnqueueReadBuffer");
  printf("results");
  for (int i = 0; i < 16; ++i)
    printf(" %g", values[i]);
  printf("\n");
  clReleaseMemObject(buffer);
}

static void kernel_info(cl_kernel kernel, cl_program program) {
  char name[64] = {0};
  check(clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL), "name");
  cl_program of = NULL;
  check(clGetKernelInfo(kernel, CL_KERNEL_PROGRAM, sizeof of, &of, NULL), "CL_KERNEL_PROGRAM");
  cl_uint args = 0;
  check(clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof args, &args, NULL), "args");
  printf("kernel %s: %u arguments, its program is the application's: %d\n", name, args,
         of == program);
}

static void scale_program(const char* options) {
  printf("== program scale, options '%s'\n", options);
  cl_program program = create(k_scale);
  program_info(program, "created");
  check(clRetainProgram(program), "clRetainProgram");
  printf("retained: reference count %u\n", reference_count(program));
  check(clReleaseProgram(program), "clReleaseProgram");
  printf("build rc %d\n", clBuildProgram(program, 1, &device, options, NULL, NULL));
  program_info(program, "built");
  cl_int rc = CL_SUCCESS;
  cl_kernel scale = clCreateKernel(program, "scale", &rc);
  check(rc, "clCreateKernel");
  printf("with a kernel: reference count %u\n", reference_count(program));
  kernel_info(scale, program);
  cl_kernel all[4] = {NULL};
  cl_uint made = 0;
  check(clCreateKernelsInProgram(program, 4, all, &made), "clCreateKernelsInProgram");
  printf("kernels in program: %u\n", made);
  cl_kernel add = NULL;
  for (cl_uint i = 0; i < made; ++i) {
    kernel_info(all[i], program);
    char name[64] = {0};
    check(clGetKernelInfo(all[i], CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL), "name");
    if (strcmp(name, "add") == 0)
      add = all[i];
  }
  printf("rebuild with kernels rc %d\n", clBuildProgram(program, 1, &device, options, NULL, NULL));
  run_scale(scale, add);
  /* The program outlives the application's reference while a kernel holds it. */
  check(clReleaseProgram(program), "clReleaseProgram");
  cl_program of = NULL;
  check(clGetKernelInfo(scale, CL_KERNEL_PROGRAM, sizeof of, &of, NULL), "CL_KERNEL_PROGRAM");
  printf("after release, the kernel's program is the application's: %d\n", of == program);
  check(clRetainProgram(of), "clRetainProgram");
  cl_kernel again = clCreateKernel(of, "add", &rc);
  printf("a kernel from it again rc %d\n", rc);
  if (again)
    clReleaseKernel(again);
  clReleaseProgram(of);
  for (cl_uint i = 0; i < made; ++i)
    clReleaseKernel(all[i]);
  clReleaseKernel(scale);
}

static void one_program(const char* name, const char* source, const char* options) {
  printf("== program %s, options '%s'\n", name, options);
  cl_program program = create(source);
  printf("build rc %d\n", clBuildProgram(program, 0, NULL, options, NULL, NULL));
  program_info(program, "built");
  clReleaseProgram(program);
}

static void separate_compile(void) {
  printf("== compile and link\n");
  cl_program header = create(k_header);
  cl_program program = create(k_uses_header);
  const char* names[1] = {"offset.h"};
  printf("compile rc %d\n",
         clCompileProgram(program, 1, &device, "", 1, &header, names, NULL, NULL));
  cl_build_status status = 0;
  check(
      clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, NULL),
      "status");
  printf("compiled status %d\n", status);
  cl_int rc = CL_SUCCESS;
  cl_program linked = clLinkProgram(context, 1, &device, "", 1, &program, NULL, NULL, &rc);
  printf("link rc %d\n", rc);
  if (linked) {
    program_string(linked, CL_PROGRAM_KERNEL_NAMES, "linked kernel names");
    clReleaseProgram(linked);
  }
  clReleaseProgram(program);
  clReleaseProgram(header);
}

int main(void) {
  cl_platform_id platform = NULL;
  check(clGetPlatformIDs(1, &platform, NULL), "clGetPlatformIDs");
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL), "clGetDeviceIDs");
  cl_int rc = CL_SUCCESS;
  context = clCreateContext(NULL, 1, &device, NULL, NULL, &rc);
  check(rc, "clCreateContext");
  queue = clCreateCommandQueue(context, device, 0, &rc);
  check(rc, "clCreateCommandQueue");
  scale_program("-DSCALE=3");
  scale_program("-DSCALE=4 -cl-fast-relaxed-math");
  scale_program("-DSCALE=3"); /* the same request again in this process */
  one_program("warning", k_warning, "");
  one_program("bad option", k_warning, "-Wall");
  one_program("broken", k_broken, "");
  one_program("scale without SCALE", k_scale, "");
  separate_compile();
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return 0;
}
