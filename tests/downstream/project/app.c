/* Builds an OpenCL kernel file through jitcache (C API) on the first OpenCL device and prints
 * how it was served: "outcome=hit tier=user". Usage: app_c KERNEL.cl INCLUDE_DIR */
#include <jitcache/jitcache.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  FILE* file;
  char* source;
  long size;
  char options[4096];
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_program program;
  cl_int err;
  jitcache_cache* cache;
  jitcache_info info;
  jitcache_error rc;

  if (argc != 3 || !(file = fopen(argv[1], "rb"))) {
    fprintf(stderr, "usage: app_c KERNEL.cl INCLUDE_DIR\n");
    return 2;
  }
  fseek(file, 0, SEEK_END);
  size = ftell(file);
  fseek(file, 0, SEEK_SET);
  source = malloc((size_t)size);
  if (!source || fread(source, 1, (size_t)size, file) != (size_t)size)
    return 2;
  fclose(file);
  snprintf(options, sizeof options, "-I %s", argv[2]);

  err = clGetPlatformIDs(1, &platform, NULL);
  if (err == CL_SUCCESS)
    err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL);
  context = err == CL_SUCCESS ? clCreateContext(NULL, 1, &device, NULL, NULL, &err) : NULL;
  if (err != CL_SUCCESS) {
    fprintf(stderr, "no OpenCL device (%d)\n", err);
    return 1;
  }
  if ((rc = jitcache_open_env(&cache)) != JITCACHE_OK) {
    fprintf(stderr, "%s: %s\n", jitcache_strerror(rc), jitcache_last_error());
    return 1;
  }
  rc = jitcache_cl_build_program(cache, context, device, source, (size_t)size, options, &program,
                                 &info);
  if (rc != JITCACHE_OK) {
    fprintf(stderr, "%s: %s\n%s", jitcache_strerror(rc), jitcache_last_error(),
            jitcache_last_build_log());
  } else {
    printf("outcome=%s tier=%s\n", info.outcome == JITCACHE_HIT ? "hit" : "miss", info.tier);
    clReleaseProgram(program);
  }
  jitcache_close(cache);
  clReleaseContext(context);
  free(source);
  return rc == JITCACHE_OK ? 0 : 1;
}
