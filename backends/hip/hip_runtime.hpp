#pragma once

#include "backends/hip/hip_api.hpp"
#include "backends/hip/hip_key.hpp"
#include "core/engine/runtime.hpp"

#include <jitcache/config.hpp>
#include <jitcache/hip.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace jitcache::hip {

/// A module jitcache loaded, as the memory tier of handles holds it; unloaded when the last
/// holder lets go.
struct LoadedModule {
  const RuntimeApi* api = nullptr;
  hipModule_t module = nullptr;
  std::map<std::string, std::string> lowered_names;
  ~LoadedModule();
};

/// The calling thread's device: HIP loads a module into the current device's context.
Expected<int> current_device(const RuntimeApi& api);
/// The properties of device `device` (hipGetDeviceProperties). Errors: no_device when there is
/// no such device; the runtime's.
Expected<hipDeviceProp_t> device_properties(int device);

/// A request of `program` as the request pipeline serves it (detail::Runtime): loaded on the
/// calling thread's current device (`target` empty; the handle is a LoadedModule), or compiled
/// for `target` without a device (the handle is a CodeObject, the entry's bytes copied out).
/// Every argument must outlive the object.
class Runtime final : public detail::Runtime {
public:
  Runtime(const Config& config, const Program& program, std::string_view target);

  const char* backend() const override { return "hip"; }
  Expected<void> check() override;
  void arguments(detail::RequestParts& out) const override;
  std::optional<detail::Place> place() const override;
  const detail::LibrarySearch* library_search() const override { return &hip::library_search(); }
  Expected<detail::ProbedLibraries<std::string>> probe() override { return probe_libraries(); }
  Expected<detail::PackageTarget> package_target(const std::string* known) override;
  std::optional<std::string> packaged_identity(const std::vector<KeyField>& fields,
                                               const std::string* known) const override;
  std::string identity_in_names(const std::string& identity) const override;
  Expected<std::string> select(const std::string& identity) override;
  std::pair<Key, detail::Dependencies> make_key() const override;
  Expected<detail::Compiled> compile(const Key& key, Handle& handle) override;
  Expected<Handle> load(const EntryView& entry, std::string& note) override;
  detail::RequestRecord describe() const override;

private:
  // The canonical target of what is asked for (the device's target id, asked once, or the one
  // named), with `table` the targets a toolchain compiles.
  Expected<std::string> canonical(const TargetTable& table);

  const Config& m_config;
  const Program& m_program;
  const std::string m_asked;         ///< the target named; empty: the current device's
  const RuntimeApi* m_api = nullptr; ///< when loading
  int m_device = 0;                  ///< when loading
  std::string m_device_arch;         ///< when loading, once asked: gcnArchName, not canonical
  std::string m_packaged;            ///< the canonical target packages were asked about
  std::optional<Toolchain> m_tools;  ///< selected
  std::string m_target;              ///< selected, canonical
};

} // namespace jitcache::hip
