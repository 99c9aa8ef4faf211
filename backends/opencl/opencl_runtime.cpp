#include "backends/opencl/opencl_runtime.hpp"

#include "backends/opencl/opencl_compile.hpp"
#include "backends/opencl/opencl_metadata.hpp"
#include "core/support/current_directory.hpp"
#include "core/tiers/packages/package_target.hpp"

#include <algorithm>
#include <utility>

namespace jitcache::opencl {

using detail::Dependencies;

namespace {

bool pocl(const Identity& id) {
  return std::any_of(id.device.begin(), id.device.end(),
                     [](const auto& field) { return field.first == "pocl_build_hash"; });
}

// Whether `id` is a PoCL device whose own kernel cache is on (POCL_KERNEL_CACHE unset or true).
bool pocl_cache_on(const Identity& id, const Config& config) {
  auto it = config.variables.find("POCL_KERNEL_CACHE");
  return pocl(id) && (it == config.variables.end() || it->second != "0");
}

// The request as a record carries it (the key's part and the compile environment are filled
// by record_request). No variable of the configuration: a request file names what to build,
// and the store process runs with the requesting process's settings from its environment.
detail::RequestRecord describe(const Identity& id, std::string_view source,
                               const std::string& options, const std::string& name) {
  detail::RequestRecord record;
  record.backend = "opencl";
  record.name = name; // not part of the key: what the stored entry is named by
  record.device = id.device_name;
  record.options = {options};
  record.directory = std::string(detail::CurrentDirectory().path());
  record.source = std::string(source);
  return record;
}

// The request as a detached `jitcache store` makes it again (StoreMode::detach). nullopt when
// the current directory is gone: relative paths could not be resolved again.
std::optional<detail::RequestRecord> handover(const Identity& id, const Key& key,
                                              std::string_view source, const std::string& options,
                                              const std::string& name) {
  detail::RequestRecord record = describe(id, source, options, name);
  if (record.directory.empty())
    return std::nullopt;
  record.key = key.digest.hex();
  return record;
}

detail::HandleCache::Handle hold(cl_program program) {
  return detail::HandleCache::Handle(program,
                                     [](void* p) { clReleaseProgram(static_cast<cl_program>(p)); });
}

// How a program compiled from source gets its entry: read and stored in the background, since
// reading it makes PoCL compile every kernel of the program, which the caller should not wait
// for. On PoCL (with its own cache on) it is read from a private program built again from the
// source (a cheap hit in PoCL's cache): PoCL holds a program's lock while it compiles the
// kernels for its binary, and reading the caller's program would block the caller's
// clCreateKernel behind it. The same private build runs again at flush, when PoCL's program
// directory also holds the kernels it specialised for the launches made, so a later process
// launches without compiling. (PoCL serialises a program's binary once, so re-reading the
// caller's program would not see them.) Other runtimes: the caller's program is read, once.
void store_later(detail::Compiled& compiled, const detail::HandleCache::Handle& handle,
                 cl_context context, cl_device_id device, std::string_view source,
                 const std::string& options, const std::string& name, bool pocl_cache) {
  if (pocl_cache) {
    compiled.later = [handle, context, device, source = std::string(source), options,
                      name]() -> Expected<Entry> {
      auto again = from_source(context, device, source, options);
      if (!again)
        return std::move(again).error();
      auto entry = entry_of(*again, name);
      clReleaseProgram(*again);
      return entry;
    };
    compiled.refresh = compiled.later;
    return;
  }
  compiled.later = [handle, name]() -> Expected<Entry> {
    return entry_of(static_cast<cl_program>(handle.get()), name);
  };
}

} // namespace

Runtime::Runtime(Cache& cache, cl_context context, cl_device_id device, std::string_view source,
                 std::string_view options, std::string name)
    : m_cache(cache), m_context(context), m_device(device), m_source(source), m_options(options),
      m_name(std::move(name)) {}

Expected<void> Runtime::check() {
  if (!m_context || !m_device)
    return Error(ErrorCode::invalid_argument, "build_program: null context or device");
  if (m_source.empty())
    return Error(ErrorCode::invalid_argument, "build_program: empty source");
  return {};
}

Expected<const Identity*> Runtime::own() {
  if (!m_own) { // not before: a request the memory tier of handles answers asks nothing
    auto id = identity(m_device);
    if (!id)
      return std::move(id).error();
    m_own = std::move(*id);
  }
  return &*m_own;
}

void Runtime::arguments(detail::RequestParts& out) const {
  // Relative paths in the options depend on the current directory (empty when it was removed,
  // which the key step then reports).
  out.add(detail::CurrentDirectory().path());
  out.add(m_options);
  out.add(m_source);
}

std::optional<detail::Place> Runtime::place() const {
  return detail::Place{m_context, m_device};
}

Expected<detail::ProbedLibraries<std::string>> Runtime::probe() {
  auto id = own();
  if (!id)
    return id.error();
  return detail::ProbedLibraries<std::string>{encode_identity(**id), {}};
}

Expected<detail::PackageTarget> Runtime::package_target(const std::string*) {
  auto id = own();
  if (!id)
    return id.error();
  KeyBuilder device("opencl");
  for (const auto& [name, value] : (*id)->device)
    device.device(name, value);
  return detail::target_of("opencl", device.finish().fields);
}

std::optional<std::string> Runtime::packaged_identity(const std::vector<KeyField>& fields,
                                                      const std::string*) const {
  // A package made with another driver of the same device (PoCL's build hash is a device
  // field); this driver's own entries are the next step's.
  if (!m_own) // package_target() asks it first
    return std::nullopt;
  Identity packaged = *m_own;
  packaged.toolchain.clear();
  for (const KeyField& field : fields)
    packaged.toolchain.emplace_back(field.name, field.value);
  if (packaged.toolchain.empty() || packaged.toolchain == m_own->toolchain)
    return std::nullopt;
  return encode_identity(packaged);
}

Expected<std::string> Runtime::select(const std::string& identity) {
  auto id = decode_identity(identity);
  if (!id)
    return Error(ErrorCode::corrupt, "an OpenCL device identity cannot be read");
  m_id = std::move(*id);
  return m_id->device_name;
}

std::pair<Key, Dependencies> Runtime::make_key() const {
  return opencl::make_key(*m_id, m_cache.config(), m_source, m_options);
}

Expected<cl_program> Runtime::build_from_source() {
  return from_source(m_context, m_device, m_source, m_options);
}

Expected<detail::Compiled> Runtime::compile(const Key& key, Handle& handle) {
  auto program = build_from_source();
  if (!program)
    return std::move(program).error();
  handle = hold(*program);
  detail::Compiled compiled;
  const Config& config = m_cache.config();
  if (m_cache.persistent("opencl") && !config.read_only) {
    store_later(compiled, handle, m_context, m_device, m_source, m_options, m_name,
                pocl_cache_on(*m_id, config));
    // Reading a PoCL binary is the expensive part of a first run: it can happen in another
    // process, after this one has exited.
    if (pocl(*m_id) && config.opencl_store == StoreMode::detach)
      compiled.handover = handover(*m_id, key, m_source, m_options, m_name);
  }
  return compiled;
}

Expected<Runtime::Handle> Runtime::load(const EntryView& entry, std::string&) {
  auto program = from_binary(m_context, m_device, entry.payload, m_options);
  if (!program)
    return std::move(program).error();
  return hold(*program);
}

detail::RequestRecord Runtime::describe() const {
  return opencl::describe(*m_id, m_source, m_options, m_name);
}

} // namespace jitcache::opencl
