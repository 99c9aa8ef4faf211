#include "interposers/rtc/rtc_request.hpp"

#include "core/engine/pipeline.hpp"
#include "core/engine/request.hpp"
#include "core/key/dependencies.hpp"
#include "core/support/byte_io.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>

namespace jitcache::rtc {

using detail::append_le;
using detail::append_sized;
using detail::take_le;
using detail::take_sized;

namespace {

namespace fs = std::filesystem;

constexpr std::string_view k_magic = "jitcache-rtc-outputs";

using Fields = std::vector<std::pair<std::string, std::string>>;

std::string encode_fields(const Fields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    append_sized(out, name);
    append_sized(out, value);
  }
  return out;
}

std::optional<Fields> decode_fields(std::string_view in) {
  Fields fields;
  while (!in.empty()) {
    std::string name, value;
    if (!take_sized(in, name) || !take_sized(in, value))
      return std::nullopt;
    fields.emplace_back(std::move(name), std::move(value));
  }
  if (fields.empty())
    return std::nullopt;
  return fields;
}

void append_int(std::string& out, int value) {
  append_le<std::uint32_t>(out, static_cast<std::uint32_t>(value));
}

bool take_int(std::string_view& in, int& value) {
  std::uint32_t raw = 0;
  if (!take_le(in, raw))
    return false;
  value = static_cast<int>(raw);
  return true;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// The fields of the request's target: the key's device section, which a package's target is.
KeyBuilder& add_device_fields(KeyBuilder& builder, const FrontEnd& front_end,
                              const Request& request) {
  return builder.device("target", target_of(front_end, request));
}

// Whether a toolchain field of a key is one make_key() adds from the configuration, not from
// the compiler's identity.
bool from_configuration(const std::string& name) {
  return name.compare(0, 4, "env ") == 0;
}

// A request of an application's RTC program as the request pipeline serves it: an offline
// compile (nothing is loaded; the handle is the Outputs), keyed by what the runtime reads.
class Runtime final : public detail::Runtime {
public:
  Runtime(const Config& config, const FrontEnd& front_end, const Request& request,
          const RealCompile& compile)
      : m_config(config), m_front_end(front_end), m_request(request), m_compile(compile) {}

  const char* backend() const override { return m_front_end.name; }
  Expected<void> check() override {
    if (!modelled(m_front_end, m_request))
      return Error(ErrorCode::unsupported, "an option the front-end does not model");
    return {};
  }
  void arguments(detail::RequestParts& out) const override {
    detail::hash_request_arguments(m_request, out);
  }
  std::optional<detail::Place> place() const override { return std::nullopt; }
  const detail::LibrarySearch* library_search() const override { return &m_front_end.search; }
  Expected<detail::ProbedLibraries<std::string>> probe() override {
    auto probed = m_front_end.probe();
    if (!probed)
      return std::move(probed).error();
    return detail::ProbedLibraries<std::string>{encode_fields(probed->identity),
                                                std::move(probed->files)};
  }
  Expected<detail::PackageTarget> package_target(const std::string*) override {
    // The request names its target (or takes the runtime's default): told without the runtime.
    KeyBuilder device(m_front_end.name);
    return detail::target_of(m_front_end.name,
                             add_device_fields(device, m_front_end, m_request).finish().fields);
  }
  std::optional<std::string> packaged_identity(const std::vector<KeyField>& fields,
                                               const std::string* known) const override {
    // The package's toolchain fields are the identity's, then those of the configuration.
    Fields identity;
    for (const KeyField& field : fields)
      if (!from_configuration(field.name))
        identity.emplace_back(field.name, field.value);
    if (identity.empty())
      return std::nullopt;
    std::string encoded = encode_fields(identity);
    if (known && *known == encoded)
      return std::nullopt; // the next step builds this key
    return encoded;
  }
  Expected<std::string> select(const std::string& identity) override {
    auto fields = decode_fields(identity);
    if (!fields)
      return Error(ErrorCode::corrupt, std::string("a remembered ") + m_front_end.runtime_name +
                                           " identity cannot be read");
    m_identity = std::move(*fields);
    return target_of(m_front_end, m_request);
  }
  std::pair<Key, detail::Dependencies> make_key() const override;
  Expected<detail::Compiled> compile(const Key&, Handle& handle) override {
    auto outputs = m_compile();
    if (!outputs)
      return std::move(outputs).error();
    // The application has its answer now; the entry is stored on a background thread (the
    // user tier's synced commit costs more than the 1% of a small compile a miss may add).
    auto shared = std::make_shared<Outputs>(std::move(*outputs));
    handle = shared;
    detail::Compiled compiled;
    compiled.later = [shared, backend = std::string(m_front_end.name)]() -> Expected<Entry> {
      return Entry(backend, encode_outputs(*shared));
    };
    return compiled;
  }
  Expected<Handle> load(const EntryView& entry, std::string&) override {
    auto outputs = decode_outputs(entry.payload);
    if (!outputs)
      return Error(ErrorCode::corrupt,
                   std::string("a stored ") + m_front_end.runtime_name + " entry cannot be read");
    return Handle(std::make_shared<Outputs>(std::move(*outputs)));
  }
  detail::RequestRecord describe() const override {
    return detail::describe_request(m_request, target_of(m_front_end, m_request));
  }

private:
  const Config& m_config;
  const FrontEnd& m_front_end;
  const Request& m_request;
  const RealCompile& m_compile;
  Fields m_identity; ///< selected
};

std::pair<Key, detail::Dependencies> Runtime::make_key() const {
  KeyBuilder builder(m_front_end.name);
  add_device_fields(builder, m_front_end, m_request);
  // The identity carries jitcache's version (FrontEnd::probe): a package's toolchain fields,
  // less the configuration's, are an identity (packaged_identity).
  for (const auto& [name, value] : m_identity)
    builder.toolchain(name, value);
  detail::add_compile_environment(builder, m_config, m_front_end.name);
  builder.source(m_request.name, "program_name");
  for (const std::string& expression : m_request.name_expressions)
    builder.source(expression, "name_expression");
  // One option per element, each its own field; include directories count by what they provide,
  // searched in the runtime's order (the program's own directory first where it is searched).
  std::vector<fs::path> dirs;
  if (m_front_end.searches_program_dir)
    if (fs::path dir = fs::path(m_request.name).parent_path(); !dir.empty())
      dirs.push_back(dir);
  detail::add_option_list(builder, m_request.options, m_front_end.include_flags, dirs);
  // Every header given in memory counts, reached by a plain #include or not (an #include MACRO
  // may name any of them); the scan adds those it reaches again.
  std::map<std::string, std::string> in_memory;
  for (const Header& header : m_request.headers) {
    builder.header(header.name, header.content, "(given in memory)");
    in_memory.emplace(header.name, header.content);
  }
  detail::Dependencies deps = detail::add_source_fields(
      builder, detail::SourceInputs{
                   m_request.source, {}, std::move(in_memory), dirs, !m_config.record.empty()});
  return {std::move(builder).finish(), std::move(deps)};
}

} // namespace

std::string encode_outputs(const Outputs& outputs) {
  std::string out(k_magic);
  append_le<std::uint32_t>(out, k_outputs_format);
  append_int(out, outputs.compile_result);
  append_le<std::uint32_t>(out, static_cast<std::uint32_t>(outputs.outputs.size()));
  for (const auto& [name, output] : outputs.outputs) {
    append_sized(out, name);
    append_int(out, output.size_result);
    append_le<std::uint64_t>(out, output.size);
    out.push_back(output.copy_result ? 1 : 0);
    append_int(out, output.copy_result.value_or(0));
    append_sized(out, output.bytes);
  }
  append_le<std::uint32_t>(out, static_cast<std::uint32_t>(outputs.lowered.size()));
  for (const auto& [expression, lowered] : outputs.lowered) {
    append_sized(out, expression);
    append_int(out, lowered.first);
    append_sized(out, lowered.second);
  }
  return out;
}

std::optional<Outputs> decode_outputs(std::string_view in) {
  if (in.substr(0, k_magic.size()) != k_magic)
    return std::nullopt;
  in.remove_prefix(k_magic.size());
  std::uint32_t format = 0, count = 0;
  Outputs outputs;
  if (!take_le(in, format) || format != k_outputs_format || !take_int(in, outputs.compile_result) ||
      !take_le(in, count))
    return std::nullopt;
  for (; count > 0; --count) {
    std::string name;
    Output output;
    std::uint64_t size = 0;
    int copy_result = 0;
    if (!take_sized(in, name) || !take_int(in, output.size_result) || !take_le(in, size) ||
        in.empty())
      return std::nullopt;
    const bool copied = in.front() == 1;
    in.remove_prefix(1);
    if (!take_int(in, copy_result) || !take_sized(in, output.bytes) || output.bytes.size() != size)
      return std::nullopt;
    output.size = static_cast<std::size_t>(size);
    if (copied)
      output.copy_result = copy_result;
    outputs.outputs.emplace(std::move(name), std::move(output));
  }
  if (!take_le(in, count))
    return std::nullopt;
  for (; count > 0; --count) {
    std::string expression, name;
    int result = 0;
    if (!take_sized(in, expression) || !take_int(in, result) || !take_sized(in, name))
      return std::nullopt;
    outputs.lowered.emplace(std::move(expression), std::make_pair(result, std::move(name)));
  }
  if (!in.empty())
    return std::nullopt;
  return outputs;
}

bool modelled(const FrontEnd& front_end, const Request& request) {
  for (const std::string& option : request.options)
    for (std::string_view prefix : front_end.unmodelled_options)
      if (starts_with(option, prefix))
        return false;
  return !front_end.default_target.empty() || target_of(front_end, request) != "";
}

namespace {

// Calls `fn(first, count, target)` for each option of `options` that names a target: `count`
// elements from `first` ("-arch=sm_90", or "-arch" then "sm_90").
template <typename Fn>
void for_each_target(const FrontEnd& front_end, const std::vector<std::string>& options, Fn fn) {
  for (std::size_t i = 0; i < options.size(); ++i)
    for (std::string_view flag : front_end.target_options) {
      const std::string_view bare = flag.substr(0, flag.size() - 1); // "-arch", then the target
      if (starts_with(options[i], flag)) {
        fn(i, 1, options[i].substr(flag.size()));
      } else if (options[i] == bare && i + 1 < options.size()) {
        fn(i, 2, options[i + 1]);
        ++i;
      } else {
        continue;
      }
      break;
    }
}

} // namespace

std::string target_of(const FrontEnd& front_end, const Request& request) {
  std::string targets;
  for_each_target(front_end, request.options, [&](std::size_t, std::size_t, std::string target) {
    targets += (targets.empty() ? "" : ",") + target;
  });
  return targets.empty() ? std::string(front_end.default_target) : targets;
}

std::vector<std::string> with_target(const FrontEnd& front_end,
                                     const std::vector<std::string>& options,
                                     const std::string& target) {
  std::vector<bool> named(options.size(), false);
  std::size_t first = options.size();
  for_each_target(front_end, options, [&](std::size_t at, std::size_t count, const std::string&) {
    first = std::min(first, at);
    std::fill_n(named.begin() + static_cast<std::ptrdiff_t>(at), count, true);
  });
  std::vector<std::string> changed;
  if (first == options.size())
    first = 0;
  for (std::size_t i = 0; i <= options.size(); ++i) {
    if (i == first)
      changed.push_back(std::string(front_end.target_options.front()) + target);
    if (i < options.size() && !named[i])
      changed.push_back(options[i]);
  }
  return changed;
}

namespace {

std::atomic<bool> g_exiting{false}; // never destroyed: read during exit

// Registered right after an object that exit destroys was made: runs before its destructor.
void exit_hook() {
  g_exiting.store(true, std::memory_order_release);
}

const Config& process_config() {
  static const Config config = Config::from_environment();
  static const bool hooked = std::atexit(exit_hook) == 0;
  static_cast<void>(hooked);
  return config;
}

} // namespace

Cache& process_cache() {
  // Destroyed at exit (or when the front-end is unloaded): the destructor flushes the records
  // and counters held for the user tier.
  static Cache cache(process_config());
  static const bool hooked = std::atexit(exit_hook) == 0;
  static_cast<void>(hooked);
  return cache;
}

bool exiting() {
  return g_exiting.load(std::memory_order_acquire);
}

bool turned_off(const char* name) {
  return process_config().front_ends_off.count(name) != 0;
}

Expected<std::shared_ptr<const Outputs>> serve(Cache& cache, const FrontEnd& front_end,
                                               const Request& request, const RealCompile& compile,
                                               BuildInfo* info) {
  Runtime runtime(cache.config(), front_end, request, compile);
  auto answer = detail::serve_request(cache, runtime);
  if (!answer)
    return std::move(answer).error();
  if (info)
    *info = answer->info;
  return std::static_pointer_cast<const Outputs>(answer->handle);
}

Expected<Key> key_of(const Config& config, const FrontEnd& front_end, const Request& request) {
  const RealCompile none = []() -> Expected<Outputs> {
    return Error(ErrorCode::unsupported, "a key is made without compiling");
  };
  Runtime runtime(config, front_end, request, none);
  return detail::current_key(runtime);
}

} // namespace jitcache::rtc
