#include "backends/hip/hip_runtime.hpp"

#include "backends/hip/hip_compile.hpp"
#include "backends/hip/hip_error.hpp"
#include "backends/hip/hip_metadata.hpp"
#include "backends/hip/hip_targets.hpp"
#include "core/engine/request.hpp"
#include "core/tiers/packages/package_target.hpp"

#include <cstdint>
#include <memory>
#include <utility>

namespace jitcache::hip {

using detail::Dependencies;

namespace {

// Why a stored entry cannot be used for `target` (code corrupt), or its lowered names: the code
// object must be an AMDGPU ELF for exactly that target, and the lowered names readable.
Expected<std::map<std::string, std::string>> usable(const EntryView& entry,
                                                    const std::string& target) {
  if (auto ok = check_code_object(entry.payload, target); !ok)
    return ok.error();
  return decode_lowered_names(entry.metadata);
}

} // namespace

LoadedModule::~LoadedModule() {
  if (module) // a failed unload leaves nothing to do but leak
    static_cast<void>(api->hipModuleUnload(module));
}

Expected<int> current_device(const RuntimeApi& api) {
  int device = 0;
  if (hipError_t rc = api.hipGetDevice(&device); rc != hipSuccess)
    return hip_error(api, "hipGetDevice", rc);
  return device;
}

Expected<hipDeviceProp_t> device_properties(int device) {
  auto count = device_count(); // bounds the runtime's initialisation
  if (!count)
    return count.error();
  if (device < 0 || device >= *count)
    return Error(ErrorCode::no_device, "HIP device " + std::to_string(device) +
                                           " does not exist (" + std::to_string(*count) +
                                           " device(s): 0.." + std::to_string(*count - 1) + ")");
  const RuntimeApi& api = **runtime();
  hipDeviceProp_t properties{};
  if (hipError_t rc = api.hipGetDeviceProperties(&properties, device); rc != hipSuccess)
    return hip_error(api, "hipGetDeviceProperties", rc);
  return properties;
}

Runtime::Runtime(const Config& config, const Program& program, std::string_view target)
    : m_config(config), m_program(program), m_asked(target) {}

Expected<void> Runtime::check() {
  if (auto ok = check_program(m_program); !ok)
    return ok.error();
  if (!m_asked.empty())
    return {};
  if (auto count = device_count(); !count) // bounds the runtime's initialisation
    return count.error();
  m_api = *runtime();
  auto device = current_device(*m_api);
  if (!device)
    return device.error();
  m_device = *device;
  return {};
}

void Runtime::arguments(detail::RequestParts& out) const {
  detail::hash_request_arguments(m_program, out);
}

std::optional<detail::Place> Runtime::place() const {
  if (!m_asked.empty())
    return std::nullopt;
  // HIP has one primary context per device, so the device ordinal stands for the context.
  return detail::Place{nullptr,
                       reinterpret_cast<const void*>(static_cast<std::uintptr_t>(m_device))};
}

Expected<std::string> Runtime::canonical(const TargetTable& table) {
  if (!m_asked.empty())
    return canonical_target(m_asked, table);
  if (m_device_arch.empty()) { // not in check(): a request the memory tier answers asks nothing
    auto properties = device_properties(m_device);
    if (!properties)
      return std::move(properties).error();
    m_device_arch = properties->gcnArchName;
  }
  return canonical_target(m_device_arch, table);
}

Expected<detail::PackageTarget> Runtime::package_target(const std::string* known) {
  // The target id is made canonical with the remembered table, or comgr's (opened, not run).
  std::optional<Toolchain> remembered = known ? decode_toolchain(*known) : std::nullopt;
  Expected<std::string> target = Error();
  if (remembered && !remembered->targets.processors.empty()) {
    target = canonical(remembered->targets);
  } else {
    auto table = target_table();
    if (!table)
      return table.error();
    target = canonical(**table);
  }
  if (!target)
    return target.error();
  m_packaged = *target;
  KeyBuilder device("hip");
  device.device("target", m_packaged);
  return detail::target_of("hip", device.finish().fields);
}

std::optional<std::string> Runtime::packaged_identity(const std::vector<KeyField>& fields,
                                                      const std::string* known) const {
  Toolchain packaged;
  for (const KeyField& field : fields)
    packaged.fields.emplace_back(field.name, field.value);
  if (packaged.fields.empty())
    return std::nullopt;
  if (known)
    if (auto own = decode_toolchain(*known); own && own->fields == packaged.fields)
      return std::nullopt;
  return encode_toolchain(packaged); // no targets: its code objects are for the one asked about
}

std::string Runtime::identity_in_names(const std::string& identity) const {
  auto tools = decode_toolchain(identity);
  if (!tools)
    return identity;
  tools->targets = TargetTable{}; // a package's identity names none
  return encode_toolchain(*tools);
}

Expected<std::string> Runtime::select(const std::string& identity) {
  auto tools = decode_toolchain(identity);
  if (!tools)
    return Error(ErrorCode::corrupt, "a remembered hipRTC identity cannot be read");
  std::string target = m_packaged;
  if (!tools->targets.processors.empty()) {
    auto canonical_id = canonical(tools->targets);
    if (!canonical_id)
      return canonical_id.error();
    target = *canonical_id;
  } else if (target.empty()) {
    return Error(ErrorCode::corrupt, "a hipRTC identity without targets was not a package's");
  }
  m_tools = std::move(*tools);
  m_target = std::move(target);
  return m_target;
}

std::pair<Key, Dependencies> Runtime::make_key() const {
  return hip::make_key(*m_tools, m_target, m_config, m_program);
}

Expected<detail::Compiled> Runtime::compile(const Key&, Handle&) {
  auto api = runtime();
  if (!api)
    return api.error();
  auto entry = compile_entry(**api, m_target, m_program);
  if (!entry)
    return std::move(entry).error();
  return detail::Compiled{std::move(*entry), {}, {}, {}};
}

Expected<Runtime::Handle> Runtime::load(const EntryView& entry, std::string&) {
  auto names = usable(entry, m_target);
  if (!names)
    return std::move(names).error();
  if (!m_asked.empty())
    return Handle(std::make_shared<CodeObject>(
        CodeObject{std::string(entry.payload), m_target, std::move(*names), {}}));
  auto loaded = std::make_shared<LoadedModule>();
  if (hipError_t rc = m_api->hipModuleLoadData(&loaded->module, entry.payload.data());
      rc != hipSuccess) {
    loaded->module = nullptr;
    Error error = hip_error(*m_api, "hipModuleLoadData", rc);
    if (rejects_image(rc))
      error.code = ErrorCode::load_failed;
    return error;
  }
  loaded->api = m_api;
  loaded->lowered_names = std::move(*names);
  return Handle(std::move(loaded));
}

detail::RequestRecord Runtime::describe() const {
  return detail::describe_request(m_program, m_target);
}

} // namespace jitcache::hip
