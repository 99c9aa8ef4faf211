#include "tools/jitcache/device_target.hpp"

#include "tools/jitcache/backend_table.hpp"

namespace jitcache::cli {

using detail::BuildRequest;

Expected<detail::PackageTarget> device_target(const Config& config, const std::string& backend,
                                              int index) {
  auto found = find_backend(backend);
  if (!found)
    return std::move(found).error();
  BuildRequest probe;
  probe.file = "device-probe";
  probe.source = backend == "opencl" ? "kernel void k() {}" : "extern \"C\" __global__ void k() {}";
  probe.device = index;
  auto key = (*found)->key(config, probe);
  if (!key)
    return std::move(key).error();
  return detail::target_of(backend, key->fields);
}

} // namespace jitcache::cli
