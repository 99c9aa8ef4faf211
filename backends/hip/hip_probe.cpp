#include "backends/hip/hip_probe.hpp"

#include "backends/hip/hip_api.hpp"
#include "backends/hip/hip_error.hpp"

namespace jitcache::hip {

namespace {

struct Probe {
  hipError_t rc = hipSuccess;
  int count = 0;
};

// The outcome of initialising the runtime, decided once per process: either what
// hipGetDeviceCount said, or an Error when the runtime is missing or did not answer in time.
const Expected<Probe>& probe() {
  static const Expected<Probe> result = []() -> Expected<Probe> {
    auto api = runtime();
    if (!api)
      return api.error();
    const RuntimeApi* table = *api; // lives until exit, so the thread may outlive this call
    auto answer = call_within<Probe>(k_init_limit, [table] {
      Probe p;
      p.rc = table->hipGetDeviceCount(&p.count);
      return p;
    });
    if (!answer)
      return Error(ErrorCode::runtime_error,
                   "hipGetDeviceCount did not return within " +
                       std::to_string(k_init_limit.count()) +
                       " s (a hung amdgpu driver?); HIP is not used again in this process");
    return *answer;
  }();
  return result;
}

} // namespace

Expected<int> device_count() {
  const auto& p = probe();
  if (!p)
    return p.error();
  if (p->rc != hipSuccess)
    return hip_error(**runtime(), "hipGetDeviceCount", p->rc);
  if (p->count <= 0)
    return Error(ErrorCode::no_device, "hipGetDeviceCount found no AMD GPU (0 devices)");
  return p->count;
}

Expected<void> runtime_ready() {
  const auto& p = probe();
  if (!p)
    return p.error();
  // hipErrorNoDevice and friends still mean the runtime finished initialising.
  return {};
}

} // namespace jitcache::hip
