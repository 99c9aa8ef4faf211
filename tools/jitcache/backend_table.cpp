#include "tools/jitcache/backend_table.hpp"

#include <jitcache/config.hpp>

namespace jitcache::cli {

using detail::Backend;

namespace {

struct Row {
  const char* name;
  std::unique_ptr<Backend> (*make)(); // null when not built
};

// The one table of backends, chosen at compile time.
constexpr Row k_table[] = {
#ifdef JITCACHE_HAVE_OPENCL
    {"opencl", &detail::make_opencl_backend},
#else
    {"opencl", nullptr},
#endif
#ifdef JITCACHE_HAVE_CUDA
    {"cuda", &detail::make_cuda_backend},
#else
    {"cuda", nullptr},
#endif
#ifdef JITCACHE_HAVE_HIP
    {"hip", &detail::make_hip_backend},
#else
    {"hip", nullptr},
#endif
// The front-ends' requests, which `jitcache warm` makes again (interposers/).
#ifdef JITCACHE_HAVE_NVRTC_FRONT_END
    {"nvrtc", &detail::make_nvrtc_backend},
#else
    {"nvrtc", nullptr},
#endif
#ifdef JITCACHE_HAVE_HIPRTC_FRONT_END
    {"hiprtc", &detail::make_hiprtc_backend},
#else
    {"hiprtc", nullptr},
#endif
};

const Row* row(const std::string& name) {
  for (const Row& r : k_table)
    if (name == r.name)
      return &r;
  return nullptr;
}

} // namespace

Expected<std::unique_ptr<Backend>> find_backend(const std::string& name) {
  if (auto known = known_backend(name); !known)
    return std::move(known).error();
  const Row* r = row(name);
  if (!r->make)
    return Error(ErrorCode::unsupported, "backend '" + name +
                                             "' is not built into this jitcache (its SDK was not "
                                             "found at configure time)");
  return r->make();
}

bool backend_built(const std::string& name) {
  const Row* r = row(name);
  return r && r->make;
}

Expected<void> known_backend(const std::string& name) {
  if (!row(name))
    return Error(ErrorCode::invalid_argument,
                 "unknown backend '" + name + "' (expected opencl, cuda, hip, nvrtc or hiprtc)");
  return {};
}

} // namespace jitcache::cli
