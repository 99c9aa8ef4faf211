#pragma once

#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_key.hpp"
#include "backends/cuda/cuda_targets.hpp"
#include "core/engine/runtime.hpp"

#include <jitcache/config.hpp>
#include <jitcache/cuda.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace jitcache::cuda {

/// A module jitcache loaded, as the memory tier of handles holds it; unloaded when the last
/// holder lets go.
struct LoadedModule {
  const DriverApi* api = nullptr;
  CUmodule module = nullptr;
  std::map<std::string, std::string> lowered_names;
  std::string note; ///< said on every request it answers: the driver JIT-compiled its PTX
  ~LoadedModule();
};

/// A request of `program` as the request pipeline serves it (detail::Runtime): loaded into the
/// calling thread's current context (`arch` empty; the handle is a LoadedModule), or compiled
/// for `arch` without a device (the handle is a Binary, the entry's bytes copied out). Every
/// argument must outlive the object.
class Runtime final : public detail::Runtime {
public:
  Runtime(const Config& config, const Program& program, std::string_view arch);

  const char* backend() const override { return "cuda"; }
  Expected<void> check() override;
  void arguments(detail::RequestParts& out) const override;
  std::optional<detail::Place> place() const override;
  const detail::LibrarySearch* library_search() const override { return &cuda::library_search(); }
  Expected<detail::ProbedLibraries<std::string>> probe() override { return probe_libraries(); }
  Expected<detail::PackageTarget> package_target(const std::string* known) override;
  bool package_target_needs_identity() const override { return false; }
  std::optional<std::string> packaged_identity(const std::vector<KeyField>& fields,
                                               const std::string* known) const override;
  std::string identity_in_names(const std::string& identity) const override;
  Expected<std::string> select(const std::string& identity) override;
  std::pair<Key, detail::Dependencies> make_key() const override;
  Expected<detail::Compiled> compile(const Key& key, Handle& handle) override;
  Expected<Handle> load(const EntryView& entry, std::string& note) override;
  std::string memory_note(const Handle& handle) const override;
  /// When loading: a CUB module's load hides its key's hundreds of stat calls.
  bool check_stamps_aside() const override { return m_arch.empty(); }
  detail::RequestRecord describe() const override;

private:
  // The target without asking NVRTC: the device's own architecture, or the one named.
  Expected<Target> untold_target();
  // The current context's compute capability (major * 10 + minor), asked once.
  Expected<int> capability();

  const Config& m_config;
  const Program& m_program;
  const std::string m_arch;         ///< empty: load into the current context
  const DriverApi* m_api = nullptr; ///< when loading
  CUcontext m_context = nullptr;    ///< when loading
  int m_capability = 0;             ///< when loading: major * 10 + minor
  std::optional<Toolchain> m_tools; ///< selected
  std::optional<Target> m_target;   ///< selected
};

} // namespace jitcache::cuda
