#include "backends/cuda/cuda_runtime.hpp"

#include "backends/cuda/cuda_compile.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/cuda_metadata.hpp"
#include "core/engine/request.hpp"
#include "core/support/log.hpp"

#include <memory>
#include <utility>

namespace jitcache::cuda {

using detail::Dependencies;

namespace {

constexpr std::string_view k_elf_magic = "\177ELF"; // a cubin is an ELF file

std::string ptx_note(const std::string& arch) {
  return "the device is newer than NVRTC can target: PTX for " + arch +
         " is JIT-compiled by the driver at load (the driver's cache, CUDA_CACHE_PATH, applies)";
}

Expected<Metadata> read_metadata(std::string_view stored) {
  auto metadata = decode_metadata(stored);
  if (!metadata)
    return Error(ErrorCode::corrupt, "the stored CUDA entry's metadata cannot be read");
  return *metadata;
}

} // namespace

LoadedModule::~LoadedModule() {
  if (module) // a failed unload leaves nothing to do
    api->cuModuleUnload(module);
}

Runtime::Runtime(const Config& config, const Program& program, std::string_view arch)
    : m_config(config), m_program(program), m_arch(arch) {}

Expected<void> Runtime::check() {
  if (m_program.source.empty())
    return Error(ErrorCode::invalid_argument, "empty CUDA source for program " + m_program.name);
  for (const std::string& option : m_program.options)
    if (option.rfind("-arch", 0) == 0 || option.rfind("--gpu-architecture", 0) == 0)
      return Error(ErrorCode::invalid_argument,
                   "option '" + option +
                       "': jitcache chooses the architecture (the device's, or the one given to "
                       "compile)");
  if (!m_arch.empty())
    return {};
  auto api = driver();
  if (!api)
    return api.error();
  m_api = *api;
  auto context = current_context(*m_api);
  if (!context)
    return std::move(context).error();
  m_context = *context;
  return {};
}

Expected<int> Runtime::capability() {
  if (m_capability == 0) { // not in check(): a request the memory tier answers asks nothing
    auto asked = context_capability(*m_api);
    if (!asked)
      return std::move(asked).error();
    m_capability = *asked;
  }
  return m_capability;
}

void Runtime::arguments(detail::RequestParts& out) const {
  detail::hash_request_arguments(m_program, out);
}

std::optional<detail::Place> Runtime::place() const {
  if (!m_arch.empty())
    return std::nullopt;
  // A context belongs to one device, so the context alone tells where the module lives.
  return detail::Place{m_context, nullptr};
}

Expected<Target> Runtime::untold_target() {
  if (!m_arch.empty())
    return named_target(m_arch);
  auto asked = capability();
  if (!asked)
    return std::move(asked).error();
  return native_target(*asked);
}

Expected<detail::PackageTarget> Runtime::package_target(const std::string*) {
  auto target = untold_target();
  if (!target)
    return std::move(target).error();
  return cuda::package_target(*target);
}

std::optional<std::string> Runtime::packaged_identity(const std::vector<KeyField>& fields,
                                                      const std::string* known) const {
  auto packaged = packaged_toolchain(fields);
  if (!packaged)
    return std::nullopt;
  if (known)
    if (auto own = decode_toolchain(*known);
        own && own->version == packaged->version && own->build == packaged->build)
      return std::nullopt;
  return encode_toolchain(*packaged);
}

std::string Runtime::identity_in_names(const std::string& identity) const {
  auto tools = decode_toolchain(identity);
  if (!tools)
    return identity;
  tools->archs.clear(); // a package's identity names none
  return encode_toolchain(*tools);
}

Expected<std::string> Runtime::select(const std::string& identity) {
  auto tools = decode_toolchain(identity);
  if (!tools)
    return Error(ErrorCode::corrupt, "a remembered NVRTC identity cannot be read");
  // A package's identity names no archs: its cubins are for the target asked about.
  Expected<Target> target = Error();
  if (tools->archs.empty()) {
    target = untold_target();
  } else if (!m_arch.empty()) {
    target = arch_target(*tools, m_arch);
  } else {
    auto asked = capability();
    if (!asked)
      return std::move(asked).error();
    target = device_target(*tools, *asked);
  }
  if (!target)
    return std::move(target).error();
  m_tools = std::move(*tools);
  m_target = std::move(*target);
  return m_target->arch;
}

std::pair<Key, Dependencies> Runtime::make_key() const {
  return cuda::make_key(*m_tools, *m_target, m_config, m_program);
}

Expected<detail::Compiled> Runtime::compile(const Key&, Handle&) {
  auto api = nvrtc();
  if (!api)
    return api.error();
  auto entry = compile_entry(**api, *m_target, m_program);
  if (!entry)
    return std::move(entry).error();
  return detail::Compiled{std::move(*entry), {}, {}, {}};
}

Expected<Runtime::Handle> Runtime::load(const EntryView& entry, std::string& note) {
  auto metadata = read_metadata(entry.metadata);
  if (!metadata)
    return std::move(metadata).error();
  if (!m_arch.empty()) {
    if (entry.payload.substr(0, k_elf_magic.size()) != k_elf_magic)
      return Error(ErrorCode::corrupt, "the stored CUDA binary is not a cubin (ELF)");
    return Handle(std::make_shared<Binary>(Binary{
        std::string(entry.payload), metadata->target, std::move(metadata->lowered_names), {}}));
  }
  // PTX is stored without the NUL that ends it, so it is copied into a string that has one.
  const bool ptx = metadata->format == "ptx";
  const std::string text = ptx ? std::string(entry.payload) : std::string();
  auto loaded = std::make_shared<LoadedModule>();
  if (CUresult rc =
          m_api->cuModuleLoadData(&loaded->module, ptx ? text.c_str() : entry.payload.data());
      rc != CUDA_SUCCESS) {
    loaded->module = nullptr;
    Error error = driver_error(*m_api, "cuModuleLoadData", rc);
    if (!context_failure(rc)) // the driver's codes for a bad image vary (INVALID_IMAGE, _PTX, ...)
      error.code = ErrorCode::load_failed;
    return error;
  }
  loaded->api = m_api;
  loaded->lowered_names = std::move(metadata->lowered_names);
  if (m_target->ptx) {
    loaded->note = ptx_note(m_target->arch);
    log::write_once(LogLevel::warn, "cuda-ptx:" + m_target->arch,
                    "compute capability " + m_target->compute_capability + ": " + loaded->note);
    note = loaded->note;
  }
  return Handle(std::move(loaded));
}

std::string Runtime::memory_note(const Handle& handle) const {
  if (!m_arch.empty())
    return {};
  return static_cast<const LoadedModule*>(handle.get())->note;
}

detail::RequestRecord Runtime::describe() const {
  return detail::describe_request(m_program, m_target->arch);
}

} // namespace jitcache::cuda
