// The C entry points of libjitcache_mpi (include/jitcache/jitcache_mpi.h): the C++ set entry
// points with an mpi::Exchange of the communicator.

#include <jitcache/jitcache_mpi.h>
#include <jitcache/mpi.hpp>

#ifdef JITCACHE_HAVE_OPENCL
#include <jitcache/opencl.hpp>
#endif

#include <chrono>
#include <exception>
#include <new>
#include <vector>

namespace {

// jitcache.h's codes mirror ErrorCode, in order, from JITCACHE_ERR_INVALID_ARGUMENT.
jitcache_error to_c(jitcache::ErrorCode code) {
  return static_cast<jitcache_error>(static_cast<int>(code) + JITCACHE_ERR_INVALID_ARGUMENT);
}

void fill_info(const jitcache::BuildInfo& info, jitcache_info* out) {
  const auto copy = [](char* to, std::size_t size, const std::string& text) {
    const std::size_t n = text.size() < size - 1 ? text.size() : size - 1;
    text.copy(to, n);
    to[n] = '\0';
  };
  out->outcome = info.outcome == jitcache::Outcome::hit ? JITCACHE_HIT : JITCACHE_MISS;
  copy(out->tier, sizeof out->tier, info.tier);
  out->compile_ms = info.compile_ms;
  out->load_ms = info.load_ms;
  out->total_ms = info.total_ms;
  out->bytes = info.bytes;
  copy(out->key, sizeof out->key, info.key.hex());
}

} // namespace

extern "C" jitcache_error
jitcache_mpi_cl_build_programs(jitcache_cache* cache, MPI_Comm comm, size_t count,
                               const jitcache_cl_request* requests, unsigned timeout_ms,
                               struct _cl_program** programs, jitcache_error* errors,
                               jitcache_info* infos) {
  if (!cache || (count > 0 && (!requests || !programs || !errors)))
    return JITCACHE_ERR_INVALID_ARGUMENT;
#ifndef JITCACHE_HAVE_OPENCL
  static_cast<void>(comm);
  static_cast<void>(timeout_ms);
  static_cast<void>(infos);
  return JITCACHE_ERR_UNSUPPORTED;
#else
  try {
    std::vector<jitcache::opencl::Request> set;
    for (size_t i = 0; i < count; ++i)
      set.push_back({requests[i].context, requests[i].device,
                     requests[i].source ? requests[i].source : "",
                     requests[i].options ? requests[i].options : ""});
    jitcache::mpi::Exchange exchange(comm);
    jitcache::cohort::Options options;
    options.timeout = std::chrono::milliseconds(timeout_ms);
    auto built =
        jitcache::opencl::build_programs(jitcache::cohort::cache_of(cache), exchange, set, options);
    jitcache_error first = JITCACHE_OK;
    for (size_t i = 0; i < count; ++i) {
      programs[i] = nullptr;
      errors[i] = built[i] ? JITCACHE_OK : to_c(built[i].error().code);
      if (built[i]) {
        programs[i] = built[i]->program;
        if (infos)
          fill_info(built[i]->info, &infos[i]);
      }
      if (first == JITCACHE_OK)
        first = errors[i];
    }
    return first;
  } catch (const std::bad_alloc&) {
    return JITCACHE_ERR_NO_MEMORY;
  } catch (...) {
    return JITCACHE_ERR_INTERNAL;
  }
#endif
}
