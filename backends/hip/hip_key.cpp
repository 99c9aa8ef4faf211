#include "backends/hip/hip_key.hpp"

#include "backends/hip/hip_api.hpp"
#include "core/key/dependencies.hpp"
#include "core/key/library_identity.hpp"
#include "core/support/byte_io.hpp"

#include <jitcache/version.hpp>

#include <filesystem>
#include <map>

namespace jitcache::hip {

using detail::add_compile_environment;
using detail::add_option_list;
using detail::add_source_fields;
using detail::Dependencies;
using detail::SourceInputs;

namespace {

namespace fs = std::filesystem;

constexpr const char* k_backend = "hip";

} // namespace

Expected<std::vector<std::pair<std::string, std::string>>> toolchain_fields() {
  static const auto fields = []() -> Expected<std::vector<std::pair<std::string, std::string>>> {
    auto rt = runtime();
    if (!rt)
      return rt.error();
    auto cg = comgr();
    if (!cg)
      return cg.error();
    // hipRTC's version call initialises the whole runtime, so its library file stands for it:
    // the name carries the full version (libamdhip64.so.5.2.21153), the size tells builds apart.
    return std::vector<std::pair<std::string, std::string>>{
        {"hiprtc_library", (*rt)->hiprtc_file.describe()},
        {"comgr_version", (*cg)->version},
        {"comgr_library", (*cg)->file.describe()},
        {"jitcache_version", k_version},
    };
  }();
  return fields;
}

Expected<const Toolchain*> toolchain() {
  static const Expected<Toolchain> probed = []() -> Expected<Toolchain> {
    auto fields = toolchain_fields();
    if (!fields)
      return fields.error();
    auto table = target_table();
    if (!table)
      return table.error();
    return Toolchain{*fields, **table};
  }();
  if (!probed)
    return probed.error();
  return &probed.value();
}

std::string encode_toolchain(const Toolchain& toolchain) {
  std::string out;
  detail::append_le<std::uint32_t>(out, static_cast<std::uint32_t>(toolchain.fields.size()));
  for (const auto& [name, value] : toolchain.fields) {
    detail::append_sized(out, name);
    detail::append_sized(out, value);
  }
  detail::append_sized(out, toolchain.targets.comgr_version);
  for (const auto& [processor, features] : toolchain.targets.processors) {
    detail::append_sized(out, processor);
    detail::append_le<std::uint32_t>(out, static_cast<std::uint32_t>(features.size()));
    for (const std::string& feature : features)
      detail::append_sized(out, feature);
  }
  return out;
}

std::optional<Toolchain> decode_toolchain(std::string_view in) {
  Toolchain toolchain;
  std::uint32_t fields = 0;
  if (!detail::take_le(in, fields))
    return std::nullopt;
  for (; fields > 0; --fields) {
    std::string name, value;
    if (!detail::take_sized(in, name) || !detail::take_sized(in, value))
      return std::nullopt;
    toolchain.fields.emplace_back(std::move(name), std::move(value));
  }
  if (!detail::take_sized(in, toolchain.targets.comgr_version))
    return std::nullopt;
  while (!in.empty()) {
    std::string processor;
    std::uint32_t count = 0;
    if (!detail::take_sized(in, processor) || !detail::take_le(in, count))
      return std::nullopt;
    auto& features = toolchain.targets.processors[processor];
    for (std::string feature; count > 0; --count) {
      if (!detail::take_sized(in, feature))
        return std::nullopt;
      features.insert(feature);
    }
  }
  if (toolchain.fields.empty()) // no targets: a package's (Runtime::packaged_identity)
    return std::nullopt;
  return toolchain;
}

const detail::LibrarySearch& library_search() {
  static const detail::LibrarySearch search{
      "hiprtc identity", {k_runtime_soname, k_hiprtc_soname, k_comgr_soname}, {}};
  return search;
}

Expected<detail::ProbedLibraries<std::string>> probe_libraries() {
  auto probed = toolchain();
  if (!probed)
    return probed.error();
  const RuntimeApi& rt = **runtime(); // opened: toolchain() succeeded
  detail::ProbedLibraries<std::string> libraries{encode_toolchain(**probed),
                                                 {rt.runtime_file.path, (**comgr()).file.path}};
  if (rt.hiprtc_file.path != rt.runtime_file.path)
    libraries.files.push_back(rt.hiprtc_file.path);
  return libraries;
}

Expected<void> check_program(const Program& program) {
  if (program.source.empty())
    return Error(ErrorCode::invalid_argument, "HIP program " + program.name + " has no source");
  if (program.name.empty())
    return Error(ErrorCode::invalid_argument, "HIP program name is empty");
  for (const std::string& option : program.options)
    for (std::string_view flag : {"--offload-arch", "--gpu-architecture", "--cuda-gpu-arch"})
      if (option.compare(0, flag.size(), flag) == 0 &&
          (option.size() == flag.size() || option[flag.size()] == '='))
        return Error(ErrorCode::invalid_argument,
                     "option '" + option +
                         "' chooses the target; jitcache does (the device's own, or the target "
                         "given to compile / --arch)");
  return {};
}

std::pair<Key, Dependencies> make_key(const Toolchain& toolchain, std::string_view target,
                                      const Config& config, const Program& program) {
  KeyBuilder builder(k_backend);
  builder.device("target", target);
  for (const auto& [name, value] : toolchain.fields)
    builder.toolchain(name, value);
  add_compile_environment(builder, config, k_backend);
  builder.source(program.name, "program_name");
  // A name expression instantiates its template, so it changes the code object.
  for (const std::string& expression : program.name_expressions)
    builder.source(expression, "name_expression");

  // hipRTC takes one option per element: each is its own field, so no two lists hash alike. An
  // include directory counts by what it provides (add_source_fields), not by its spelling, and
  // hipRTC searches only these: neither the program's directory nor the current one.
  std::vector<fs::path> dirs;
  add_option_list(builder, program.options,
                  {{"-I", "-I"},
                   {"-isystem", "-isystem"},
                   {"-iquote", "-iquote"},
                   {"-idirafter", "-idirafter"}},
                  dirs);
  // hipRTC is given every in-memory header, reached by a plain #include or not (an #include
  // MACRO may name any of them), so each one counts; the scan adds those it reaches again.
  std::map<std::string, std::string> in_memory;
  for (const Header& header : program.headers) {
    builder.header(header.name, header.content, "(given in memory)");
    in_memory.emplace(header.name, header.content);
  }
  Dependencies deps = add_source_fields(
      builder,
      SourceInputs{program.source, {}, std::move(in_memory), dirs, !config.record.empty()});
  return {std::move(builder).finish(), std::move(deps)};
}

} // namespace jitcache::hip
