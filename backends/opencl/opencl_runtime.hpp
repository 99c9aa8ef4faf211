#pragma once

#include "backends/opencl/opencl_key.hpp"
#include "core/engine/runtime.hpp"

#include <jitcache/cache.hpp>
#include <jitcache/opencl.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace jitcache::opencl {

/// A request to build `source` with `options` for `device` in `context`, as the request
/// pipeline serves it (detail::Runtime); the handle is the cl_program, released when the last
/// holder lets go. Every argument must outlive the object. A front-end that answers for the
/// application's own program (the OpenCL layer) derives from it and builds that program.
class Runtime : public detail::Runtime {
public:
  /// `name`: the source's name, for people (`jitcache build`'s file; stored with the entry, not
  /// part of the key); empty when the request has none (an application's).
  Runtime(Cache& cache, cl_context context, cl_device_id device, std::string_view source,
          std::string_view options, std::string name = {});

  const char* backend() const override { return "opencl"; }
  Expected<void> check() override;
  void arguments(detail::RequestParts& out) const override;
  std::optional<detail::Place> place() const override;
  /// None: the identity is the device's, asked each time (once per device and process).
  const detail::LibrarySearch* library_search() const override { return nullptr; }
  Expected<detail::ProbedLibraries<std::string>> probe() override;
  Expected<detail::PackageTarget> package_target(const std::string* known) override;
  std::optional<std::string> packaged_identity(const std::vector<KeyField>& fields,
                                               const std::string* known) const override;
  Expected<std::string> select(const std::string& identity) override;
  std::pair<Key, detail::Dependencies> make_key() const override;
  Expected<detail::Compiled> compile(const Key& key, Handle& handle) override;
  Expected<Handle> load(const EntryView& entry, std::string& note) override;
  detail::RequestRecord describe() const override;

protected:
  /// The program a compile builds from the request's source, built for the device; the caller
  /// owns one reference. Errors: compile_failed (with the build log), runtime_error naming the
  /// failing call. By default a program of its own (from_source).
  virtual Expected<cl_program> build_from_source();

private:
  // The device's identity, asked once per object (and once per device and process: identity()).
  Expected<const Identity*> own();

  Cache& m_cache;
  const cl_context m_context;
  const cl_device_id m_device;
  const std::string_view m_source;
  const std::string m_options;
  const std::string m_name;
  std::optional<Identity> m_own; ///< the device's, once own() asked
  std::optional<Identity> m_id;  ///< selected
};

} // namespace jitcache::opencl
