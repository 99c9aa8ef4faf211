#include "backends/cuda/cuda_key.hpp"

#include "backends/cuda/cuda_error.hpp"
#include "core/key/dependencies.hpp"
#include "core/key/library_identity.hpp"
#include "core/support/byte_io.hpp"
#include "core/tiers/packages/package_target.hpp"

#include <jitcache/version.hpp>

#include <algorithm>
#include <charconv>
#include <map>

namespace jitcache::cuda {

using detail::add_compile_environment;
using detail::add_option_list;
using detail::add_source_fields;
using detail::Dependencies;
using detail::SourceInputs;

namespace fs = std::filesystem;

constexpr const char* k_backend = "cuda";

Expected<NvrtcSays> ask_nvrtc(const NvrtcApi& api) {
  NvrtcSays says;
  if (nvrtcResult rc = api.nvrtcVersion(&says.major, &says.minor); rc != NVRTC_SUCCESS)
    return nvrtc_error(api, "nvrtcVersion", rc, {});
  int count = 0;
  if (nvrtcResult rc = api.nvrtcGetNumSupportedArchs(&count); rc != NVRTC_SUCCESS)
    return nvrtc_error(api, "nvrtcGetNumSupportedArchs", rc, {});
  if (count < 0)
    return Error(ErrorCode::runtime_error,
                 "nvrtcGetNumSupportedArchs answered " + std::to_string(count) + " archs");
  says.archs.resize(static_cast<std::size_t>(count));
  if (count == 0) // no list to ask for: a null buffer is NVRTC's invalid input
    return says;
  if (nvrtcResult rc = api.nvrtcGetSupportedArchs(says.archs.data()); rc != NVRTC_SUCCESS)
    return nvrtc_error(api, "nvrtcGetSupportedArchs", rc, {});
  return says;
}

Expected<Toolchain> probe_toolchain(const NvrtcApi& api) {
  auto says = ask_nvrtc(api);
  if (!says)
    return says.error();
  Toolchain toolchain;
  toolchain.version = std::to_string(says->major) + "." + std::to_string(says->minor);
  // NVRTC reports no build number; its library file's size tells builds apart. Not the file's
  // name: one build is installed as libnvrtc.so.13.0.88 by a toolkit and as libnvrtc.so.13 by a
  // package, and a package of kernels made with one must serve a machine with the other.
  std::error_code ec;
  const auto size = fs::file_size(api.file, ec);
  toolchain.build = ec ? std::string("size unknown") : std::to_string(size) + " bytes";
  toolchain.archs = std::move(says->archs);
  std::sort(toolchain.archs.begin(), toolchain.archs.end());
  return toolchain;
}

Expected<const Toolchain*> toolchain() {
  static const Expected<Toolchain> probed = []() -> Expected<Toolchain> {
    auto api = nvrtc();
    if (!api)
      return api.error();
    return probe_toolchain(**api);
  }();
  if (!probed)
    return probed.error();
  return &probed.value();
}

std::string encode_toolchain(const Toolchain& toolchain) {
  std::string out;
  detail::append_sized(out, toolchain.version);
  detail::append_sized(out, toolchain.build);
  for (int arch : toolchain.archs)
    detail::append_le<std::uint32_t>(out, static_cast<std::uint32_t>(arch));
  return out;
}

std::optional<Toolchain> decode_toolchain(std::string_view in) {
  Toolchain toolchain;
  if (!detail::take_sized(in, toolchain.version) || !detail::take_sized(in, toolchain.build))
    return std::nullopt;
  for (std::uint32_t arch = 0; detail::take_le(in, arch);)
    toolchain.archs.push_back(static_cast<int>(arch));
  if (!in.empty())
    return std::nullopt;
  return toolchain;
}

const detail::LibrarySearch& library_search() {
  static const detail::LibrarySearch search{
      "nvrtc identity", {JITCACHE_NVRTC_SONAME}, {JITCACHE_CUDA_LIBRARY_DIR}};
  return search;
}

namespace {

// The key's device fields.
KeyBuilder& add_device_fields(KeyBuilder& builder, const Target& target) {
  return builder.device("compute_capability", target.compute_capability)
      .device("target_arch", target.arch);
}

} // namespace

Expected<detail::ProbedLibraries<std::string>> probe_libraries() {
  auto probed = toolchain();
  if (!probed)
    return probed.error();
  return detail::ProbedLibraries<std::string>{encode_toolchain(**probed), {(**nvrtc()).file}};
}

detail::PackageTarget package_target(const Target& target) {
  KeyBuilder device(k_backend);
  return detail::target_of(k_backend, add_device_fields(device, target).finish().fields);
}

std::optional<Toolchain> packaged_toolchain(const std::vector<KeyField>& fields) {
  std::optional<std::string> version, build;
  for (const KeyField& field : fields) {
    if (field.name == "nvrtc_version")
      version = field.value;
    else if (field.name == "nvrtc_build")
      build = field.value;
  }
  if (!version || !build)
    return std::nullopt;
  return Toolchain{*version, *build, {}};
}

const std::vector<fs::path>& toolkit_include_dirs() {
  static const std::vector<fs::path> dirs = [] {
    std::vector<fs::path> found;
    const fs::path include = JITCACHE_CUDA_INCLUDE_DIR;
    std::error_code ec;
    for (const fs::path& dir : {include / "cccl", include})
      if (fs::is_directory(dir, ec))
        found.push_back(dir);
    return found;
  }();
  return dirs;
}

std::pair<Key, Dependencies> make_key(const Toolchain& toolchain, const Target& target,
                                      const Config& config, const Program& program) {
  KeyBuilder builder(k_backend);
  add_device_fields(builder, target)
      .toolchain("nvrtc_version", toolchain.version)
      .toolchain("nvrtc_build", toolchain.build)
      .toolchain("jitcache_version", k_version);
  add_compile_environment(builder, config, "cuda");
  builder.source(program.name, "program_name");
  for (const std::string& expression : program.name_expressions)
    builder.source(expression, "name_expression");

  // NVRTC takes one option per element: each is its own field, so no two lists hash alike.
  // Include directories are keyed by what they provide, not by how they are spelled (as
  // add_source_fields does for an option string), and searched in NVRTC's order: the program's
  // own directory ("x" includes of the source), -I/--include-path, the toolkit's.
  std::vector<fs::path> dirs;
  if (fs::path dir = fs::path(program.name).parent_path(); !dir.empty())
    dirs.push_back(dir);
  add_option_list(builder, program.options, {{"--include-path=", "-I"}, {"-I", "-I"}}, dirs);
  const auto& toolkit = toolkit_include_dirs();
  dirs.insert(dirs.end(), toolkit.begin(), toolkit.end());
  std::map<std::string, std::string> in_memory;
  for (const Header& header : program.headers)
    in_memory.emplace(header.name, header.content);
  Dependencies deps = add_source_fields(
      builder,
      SourceInputs{program.source, {}, std::move(in_memory), dirs, !config.record.empty()});
  return {std::move(builder).finish(), std::move(deps)};
}

} // namespace jitcache::cuda
