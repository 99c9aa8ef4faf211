#include "core/key/library_identity.hpp"

#include "core/engine/cache_core.hpp"
#include "core/key/dependencies.hpp"
#include "core/key/manifest.hpp"

#include <filesystem>

namespace jitcache::detail {

namespace {

constexpr const char* k_loader_cache = "/etc/ld.so.cache";

// A colon-separated path list, without its empty items.
std::vector<std::string> split_path(std::string_view list) {
  std::vector<std::string> out;
  for (std::string_view rest = list; !rest.empty();) {
    const auto colon = rest.find(':');
    if (std::string_view dir = rest.substr(0, colon); !dir.empty())
      out.emplace_back(dir);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  return out;
}

// The library search path as `core`'s config has it (LD_LIBRARY_PATH).
std::string library_path(const CacheCore& core) {
  const auto& variables = core.config().variables;
  const auto path = variables.find("LD_LIBRARY_PATH");
  return path != variables.end() ? path->second : "";
}

// The name of the record that remembers the identity `search` finds.
Digest record_of(const CacheCore& core, const LibrarySearch& search) {
  std::string sonames, dirs;
  for (std::string_view soname : search.sonames)
    sonames.append(soname).push_back('\n');
  for (const std::string& dir : search.dirs)
    dirs.append(dir).push_back('\n');
  return record_name(search.kind, {library_path(core), sonames, dirs});
}

} // namespace

bool recall_identity(CacheCore& core, const std::string& backend, const LibrarySearch& search,
                     const std::function<bool(std::string_view)>& recall) {
  auto record = core.recall(backend, record_of(core, search));
  return record && recall(record->payload);
}

Expected<void> recall_or_probe(CacheCore& core, const std::string& backend,
                               const LibrarySearch& search,
                               const std::function<bool(std::string_view)>& recall,
                               const std::function<Expected<ProbedLibraries<std::string>>()>& probe,
                               bool* remembered) {
  if ((*remembered = recall_identity(core, backend, search, recall)))
    return {};
  auto probed = probe();
  if (!probed)
    return std::move(probed).error();
  Dependencies deps;
  deps.read.push_back(stamp_of(k_loader_cache));
  for (const std::string& file : probed->files) {
    deps.read.push_back(stamp_of(file));
    deps.listed.push_back(std::filesystem::path(file).parent_path().string());
  }
  deps.listed.insert(deps.listed.end(), search.dirs.begin(), search.dirs.end());
  for (std::string& dir : split_path(library_path(core)))
    deps.listed.push_back(std::move(dir));
  if (auto guards = guards_of(deps, core.stamp_clock()))
    core.remember(backend, record_of(core, search), Record{*guards, std::move(probed->identity)});
  return {};
}

} // namespace jitcache::detail
