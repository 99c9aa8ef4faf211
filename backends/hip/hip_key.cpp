#include "backends/hip/hip_key.hpp"

#include "backends/hip/hip_api.hpp"
#include "core/dependencies.hpp"

#include <jitcache/version.hpp>

#include <filesystem>
#include <map>

namespace jitcache::hip {

namespace {

namespace fs = std::filesystem;

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

Expected<std::pair<Key, Dependencies>> key_and_dependencies(const Config& config,
                                                           std::string_view target,
                                                           const Program& program) {
  auto toolchain = toolchain_fields();
  if (!toolchain)
    return toolchain.error();
  KeyBuilder builder("hip");
  builder.device("target", target);
  for (const auto& [name, value] : *toolchain)
    builder.toolchain(name, value);
  add_compile_environment(builder, config, "hip");
  builder.source(program.name, "program_name");
  // A name expression instantiates its template, so it changes the code object.
  for (const std::string& expression : program.name_expressions)
    builder.source(expression, "name_expression");

  // hipRTC takes one option per element: each is its own field, so no two lists hash alike. An
  // include directory counts by what it provides (add_source_fields), not by its spelling, and
  // hipRTC searches only these: neither the program's directory nor the current one.
  std::vector<fs::path> dirs;
  add_option_list(builder, program.options,
                  {{"-I", "-I"}, {"-isystem", "-isystem"}, {"-iquote", "-iquote"},
                   {"-idirafter", "-idirafter"}},
                  dirs);
  // hipRTC is given every in-memory header, reached by a plain #include or not (an #include
  // MACRO may name any of them), so each one counts; the scan adds those it reaches again.
  std::map<std::string, std::string> in_memory;
  for (const Header& header : program.headers) {
    builder.header(header.name, header.content, "(given in memory)");
    in_memory.emplace(header.name, header.content);
  }
  Dependencies deps =
      add_source_fields(builder, SourceInputs{program.source, {}, std::move(in_memory), dirs});
  return std::pair<Key, Dependencies>{builder.finish(), std::move(deps)};
}

Expected<Key> key_for(const Config& config, std::string_view target, const Program& program) {
  auto keyed = key_and_dependencies(config, target, program);
  if (!keyed)
    return keyed.error();
  return std::move(keyed->first);
}

} // namespace jitcache::hip
