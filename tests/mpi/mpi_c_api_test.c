/* The C entry point of libjitcache_mpi (jitcache_mpi.h), as a C program uses it: every rank
 * builds two OpenCL kernels of an overlapping set (3 distinct in the job) on PoCL; the job
 * compiles each once; every rank's programs run. Exit status 0 on success. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <jitcache/jitcache_mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "rank %d: %s:%d: %s\n", rank, __FILE__, __LINE__, #cond);                    \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
  } while (0)

static int rank;

static void source_of(int n, char* out, size_t size) {
  snprintf(out, size,
           "__kernel void k(__global int* x) { size_t i = get_global_id(0); x[i] = x[i] * 3 + "
           "%d; }\n",
           n);
}

static void expect_runs(cl_context context, cl_device_id device, cl_program program, int n) {
  cl_int rc = CL_SUCCESS;
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &rc);
  CHECK(rc == CL_SUCCESS);
  cl_kernel kernel = clCreateKernel(program, "k", &rc);
  CHECK(rc == CL_SUCCESS);
  cl_int x[8];
  for (int i = 0; i < 8; ++i)
    x[i] = i;
  cl_mem buffer =
      clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof x, x, &rc);
  CHECK(rc == CL_SUCCESS);
  CHECK(clSetKernelArg(kernel, 0, sizeof buffer, &buffer) == CL_SUCCESS);
  size_t global = 8;
  CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL) == CL_SUCCESS);
  CHECK(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, sizeof x, x, 0, NULL, NULL) == CL_SUCCESS);
  for (int i = 0; i < 8; ++i)
    CHECK(x[i] == i * 3 + n);
  clReleaseMemObject(buffer);
  clReleaseKernel(kernel);
  clReleaseCommandQueue(queue);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  /* A folder all ranks share (made by rank 0), and a home of each rank's own for PoCL's cache. */
  char dir[256] = "/tmp/jitcache-mpi-c-XXXXXX";
  if (rank == 0)
    CHECK(mkdtemp(dir) != NULL);
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  char home[64] = "/tmp/jitcache-mpi-c-home-XXXXXX";
  CHECK(mkdtemp(home) != NULL);
  setenv("HOME", home, 1);

  cl_platform_id platform;
  cl_device_id device;
  CHECK(clGetPlatformIDs(1, &platform, NULL) == CL_SUCCESS);
  CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) == CL_SUCCESS);
  cl_int rc = CL_SUCCESS;
  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &rc);
  CHECK(rc == CL_SUCCESS);

  jitcache_settings settings;
  jitcache_settings_init(&settings);
  settings.dir = dir;
  settings.opencl_store = JITCACHE_STORE_WAIT;
  jitcache_cache* cache = NULL;
  CHECK(jitcache_open(&settings, &cache) == JITCACHE_OK);

  const int kernels[2] = {rank % 2, 2};
  char sources[2][256];
  jitcache_cl_request requests[2];
  for (int i = 0; i < 2; ++i) {
    source_of(kernels[i], sources[i], sizeof sources[i]);
    requests[i].context = context;
    requests[i].device = device;
    requests[i].source = sources[i];
    requests[i].options = NULL;
  }
  cl_program programs[2];
  jitcache_error errors[2];
  jitcache_info infos[2];
  CHECK(jitcache_mpi_cl_build_programs(cache, MPI_COMM_WORLD, 2, requests, 60000, programs, errors,
                                       infos) == JITCACHE_OK);
  for (int i = 0; i < 2; ++i) {
    CHECK(errors[i] == JITCACHE_OK && programs[i] != NULL);
    expect_runs(context, device, programs[i], kernels[i]);
    clReleaseProgram(programs[i]);
  }
  CHECK(jitcache_mpi_cl_build_programs(NULL, MPI_COMM_WORLD, 0, NULL, 0, NULL, NULL, NULL) ==
        JITCACHE_ERR_INVALID_ARGUMENT);

  jitcache_statistics stats;
  CHECK(jitcache_stats(cache, &stats) == JITCACHE_OK);
  unsigned long long mine = stats.opencl.compiles, total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(total == (size > 1 ? 3u : 2u));
  jitcache_close(cache);
  clReleaseContext(context);
  MPI_Barrier(MPI_COMM_WORLD);
  char command[512];
  snprintf(command, sizeof command, "rm -rf %s", home);
  CHECK(system(command) == 0);
  if (rank == 0) {
    snprintf(command, sizeof command, "rm -rf %s", dir);
    CHECK(system(command) == 0);
  }
  MPI_Finalize();
  return 0;
}
