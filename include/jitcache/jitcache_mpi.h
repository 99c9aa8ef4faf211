/* jitcache over MPI, for C (libjitcache_mpi): the set entry points of the C++ API
 * (jitcache/mpi.hpp, jitcache/cohort.hpp) taking a communicator. Every rank of `comm` calls the
 * same function, each with its own requests; each kernel that no rank's tiers hold is compiled
 * once for the whole job, by one of the ranks that asked for it, and its binary handed to the
 * others. A rank waits at most `timeout_ms` for another (to join, and for each binary owed to
 * it), then compiles what it lacks itself. MPI_Init must have been called. */
#ifndef JITCACHE_MPI_H
#define JITCACHE_MPI_H

#include <jitcache/jitcache.h>

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One OpenCL request of a set. */
typedef struct jitcache_cl_request {
  struct _cl_context* context;
  struct _cl_device_id* device;
  const char* source;  /* NUL-ended; must not be empty */
  const char* options; /* NUL-ended; may be NULL (none) */
} jitcache_cl_request;

/* jitcache_cl_build_program for each of `requests[0..count)` together with the other ranks of
 * `comm` (see above). For each request i: errors[i] is its result (JITCACHE_OK, or the error its
 * compile gave on whichever rank compiled it); on JITCACHE_OK programs[i] is a program the
 * caller owns one reference of (clReleaseProgram it), else NULL; infos[i] (when `infos` is not
 * NULL) how it was obtained. Returns JITCACHE_OK when every request succeeded, else the first
 * request's error that is not JITCACHE_OK; JITCACHE_ERR_INVALID_ARGUMENT (nothing done) for a
 * NULL cache, requests, programs or errors with count > 0; JITCACHE_ERR_UNSUPPORTED when
 * libjitcache_mpi was built without OpenCL. Collective over `comm`. */
jitcache_error jitcache_mpi_cl_build_programs(jitcache_cache* cache, MPI_Comm comm, size_t count,
                                              const jitcache_cl_request* requests,
                                              unsigned timeout_ms, struct _cl_program** programs,
                                              jitcache_error* errors, jitcache_info* infos);

#ifdef __cplusplus
}
#endif

#endif
