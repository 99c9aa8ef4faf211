#include "backends/opencl/opencl_key.hpp"

#include "backends/opencl/opencl_error.hpp"
#include "core/key/dependencies.hpp"
#include "core/support/byte_io.hpp"

#include <jitcache/version.hpp>

#include <cstdint>
#include <map>
#include <mutex>

namespace jitcache::opencl {

using detail::add_compile_environment;
using detail::add_source_fields;
using detail::Dependencies;
using detail::SourceInputs;

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

std::string encode_identity(const Identity& id) {
  std::string out;
  for (const auto* fields : {&id.device, &id.toolchain}) {
    detail::append_le<std::uint32_t>(out, static_cast<std::uint32_t>(fields->size()));
    for (const auto& [name, value] : *fields) {
      detail::append_sized(out, name);
      detail::append_sized(out, value);
    }
  }
  detail::append_sized(out, id.device_name);
  return out;
}

std::optional<Identity> decode_identity(std::string_view in) {
  Identity id;
  for (auto* fields : {&id.device, &id.toolchain}) {
    std::uint32_t count = 0;
    if (!detail::take_le(in, count))
      return std::nullopt;
    for (; count > 0; --count) {
      std::string name, value;
      if (!detail::take_sized(in, name) || !detail::take_sized(in, value))
        return std::nullopt;
      fields->emplace_back(std::move(name), std::move(value));
    }
  }
  if (!detail::take_sized(in, id.device_name) || !in.empty())
    return std::nullopt;
  return id;
}

std::pair<Key, Dependencies> make_key(const Identity& id, const Config& config,
                                      std::string_view source, std::string_view options) {
  KeyBuilder builder("opencl");
  for (const auto& [name, value] : id.device)
    builder.device(name, value);
  for (const auto& [name, value] : id.toolchain)
    builder.toolchain(name, value);
  add_compile_environment(builder, config, "opencl");
  Dependencies deps =
      add_source_fields(builder, SourceInputs{source, options, {}, {}, !config.record.empty()});
  return {std::move(builder).finish(), std::move(deps)};
}

Key key_for(const Identity& id, const Config& config, std::string_view source,
            std::string_view options) {
  return make_key(id, config, source, options).first;
}

} // namespace jitcache::opencl
