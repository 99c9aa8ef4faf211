#include "backends/opencl/opencl_key.hpp"

#include "backends/opencl/opencl_error.hpp"
#include "core/cache_core.hpp"
#include "core/dependencies.hpp"

#include <jitcache/version.hpp>

#include <map>
#include <mutex>

namespace jitcache::opencl {

namespace {

template <typename Getter, typename Handle, typename Param>
Expected<std::string> info_string(Getter getter, const char* call, Handle handle, Param param) {
  std::size_t size = 0;
  if (cl_int rc = getter(handle, param, 0, nullptr, &size); rc != CL_SUCCESS)
    return cl_error(call, rc);
  std::string value(size, '\0');
  if (cl_int rc = getter(handle, param, size, value.data(), nullptr); rc != CL_SUCCESS)
    return cl_error(call, rc);
  while (!value.empty() && value.back() == '\0')
    value.pop_back();
  return value;
}

Expected<Identity> query(cl_device_id device) {
  cl_platform_id platform = nullptr;
  if (cl_int rc = clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr);
      rc != CL_SUCCESS)
    return cl_error("clGetDeviceInfo(CL_DEVICE_PLATFORM)", rc);
  Identity id;
  struct Query {
    bool device_field;
    const char* name;
    cl_uint param;
    bool on_platform;
  };
  static constexpr Query k_queries[] = {
      {true, "platform_name", CL_PLATFORM_NAME, true},
      {true, "device_name", CL_DEVICE_NAME, false},
      {true, "device_vendor", CL_DEVICE_VENDOR, false},
      {true, "device_version", CL_DEVICE_VERSION, false},
      {false, "platform_version", CL_PLATFORM_VERSION, true},
      {false, "driver_version", CL_DRIVER_VERSION, false},
  };
  for (const Query& q : k_queries) {
    auto value = q.on_platform
                     ? info_string(clGetPlatformInfo, "clGetPlatformInfo", platform, q.param)
                     : info_string(clGetDeviceInfo, "clGetDeviceInfo", device, q.param);
    if (!value)
      return std::move(value).error();
    (q.device_field ? id.device : id.toolchain).emplace_back(q.name, *value);
    if (q.param == CL_DEVICE_NAME)
      id.device_name = *value;
    // PoCL names the code it generates for the device (target triple and CPU) after "HSTR:".
    if (q.param == CL_DEVICE_VERSION)
      if (auto at = value->find("HSTR:"); at != std::string::npos)
        id.device.emplace_back("pocl_build_hash",
                               value->substr(value->find_first_not_of(' ', at + 5)));
  }
  id.toolchain.emplace_back("jitcache_version", k_version);
  return id;
}

} // namespace

Expected<Identity> identity(cl_device_id device) {
  static std::mutex mutex;
  static std::map<cl_device_id, Identity> known;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(device); it != known.end())
      return it->second;
  }
  auto id = query(device);
  if (id) {
    std::lock_guard<std::mutex> lock(mutex);
    known.emplace(device, *id);
  }
  return id;
}

namespace {

std::pair<Key, Dependencies> build_key(const Identity& id, const Config& config,
                                       std::string_view source, std::string_view options) {
  KeyBuilder builder("opencl");
  for (const auto& [name, value] : id.device)
    builder.device(name, value);
  for (const auto& [name, value] : id.toolchain)
    builder.toolchain(name, value);
  add_compile_environment(builder, config, "opencl");
  Dependencies deps = add_source_fields(builder, SourceInputs{source, options, {}, {}});
  return {builder.finish(), std::move(deps)};
}

} // namespace

Key key_for(const Identity& id, const Config& config, std::string_view source,
            std::string_view options) {
  return build_key(id, config, source, options).first;
}

detail::GuardedKey remembered_key(detail::CacheCore& core, const Identity& id,
                                  std::string_view source, std::string_view options) {
  std::error_code ec; // a removed current directory reads as empty; the key build reports it
  const Digest name = detail::record_name(
      "opencl key", {detail::fields_text(id.device), detail::fields_text(id.toolchain),
                     detail::fields_text(core.config().compile_environment("opencl")),
                     std::filesystem::current_path(ec).string(), options, source});
  // Building the key cannot fail, so neither can this.
  return *detail::manifest_key(core, "opencl", name,
                               [&]() -> Expected<std::pair<Key, Dependencies>> {
                                 return build_key(id, core.config(), source, options);
                               });
}

} // namespace jitcache::opencl
