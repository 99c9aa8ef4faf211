#include "backends/hip/hip_targets.hpp"

#include "backends/hip/hip_api.hpp"

#include <algorithm>

namespace jitcache::hip {

namespace {

constexpr std::string_view k_isa_prefix = "amdgcn-amd-amdhsa--";

// Owns a comgr metadata node for the length of a scope.
class Node {
public:
  Node(const ComgrApi& api, amd_comgr_metadata_node_t node) : m_api(api), m_node(node) {}
  ~Node() { m_api.amd_comgr_destroy_metadata(m_node); }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  amd_comgr_metadata_node_t get() const { return m_node; }

private:
  const ComgrApi& m_api;
  amd_comgr_metadata_node_t m_node;
};

std::string node_string(const ComgrApi& api, amd_comgr_metadata_node_t node) {
  std::size_t size = 0;
  if (api.amd_comgr_get_metadata_string(node, &size, nullptr) != AMD_COMGR_STATUS_SUCCESS ||
      size == 0)
    return {};
  std::string text(size, '\0');
  if (api.amd_comgr_get_metadata_string(node, &size, text.data()) != AMD_COMGR_STATUS_SUCCESS)
    return {};
  text.resize(size - 1); // the size counts the terminating NUL
  return text;
}

// The features an ISA takes: the keys of its metadata's "Features" map (empty for processors
// such as gfx1030 that take none).
std::set<std::string> isa_features(const ComgrApi& api, const char* isa) {
  std::set<std::string> features;
  amd_comgr_metadata_node_t root{};
  if (api.amd_comgr_get_isa_metadata(isa, &root) != AMD_COMGR_STATUS_SUCCESS)
    return features;
  Node root_node(api, root);
  amd_comgr_metadata_node_t map{};
  if (api.amd_comgr_metadata_lookup(root, "Features", &map) != AMD_COMGR_STATUS_SUCCESS)
    return features;
  Node map_node(api, map);
  amd_comgr_metadata_kind_t kind{};
  if (api.amd_comgr_get_metadata_kind(map, &kind) != AMD_COMGR_STATUS_SUCCESS ||
      kind != AMD_COMGR_METADATA_KIND_MAP)
    return features;
  struct Visit {
    const ComgrApi* api;
    std::set<std::string>* out;
  } visit{&api, &features};
  api.amd_comgr_iterate_map_metadata(
      map,
      [](amd_comgr_metadata_node_t key, amd_comgr_metadata_node_t, void* data) {
        auto* v = static_cast<Visit*>(data);
        v->out->insert(node_string(*v->api, key));
        return AMD_COMGR_STATUS_SUCCESS;
      },
      &visit);
  features.erase(std::string());
  return features;
}

// gfx900 < gfx90a < gfx1010: by the length of the number, then by its digits.
bool by_gfx_number(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

Expected<TargetTable> read_table() {
  auto api = comgr();
  if (!api)
    return api.error();
  const ComgrApi& c = **api;
  TargetTable table;
  table.comgr_version = c.version;
  std::size_t count = 0;
  if (c.amd_comgr_get_isa_count(&count) != AMD_COMGR_STATUS_SUCCESS)
    count = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const char* isa = nullptr;
    if (c.amd_comgr_get_isa_name(i, &isa) != AMD_COMGR_STATUS_SUCCESS || !isa)
      continue;
    const std::string_view name(isa);
    if (name.substr(0, k_isa_prefix.size()) != k_isa_prefix)
      continue;
    table.processors[std::string(name.substr(k_isa_prefix.size()))] = isa_features(c, isa);
  }
  if (table.processors.empty())
    return Error(ErrorCode::runtime_error,
                 "comgr " + c.version + " (" + c.file.name + ") lists no amdgcn-amd-amdhsa target");
  return table;
}

std::string supported_list(const TargetTable& table) {
  std::string out;
  for (const std::string& target : table.describe())
    out += (out.empty() ? "" : ", ") + target;
  return "supported by comgr " + table.comgr_version + ": " + out;
}

} // namespace

std::vector<std::string> TargetTable::describe() const {
  std::vector<std::string> names;
  for (const auto& [processor, features] : processors)
    names.push_back(processor);
  std::sort(names.begin(), names.end(), by_gfx_number);
  std::vector<std::string> out;
  for (const std::string& processor : names) {
    std::string text = processor;
    for (const std::string& feature : processors.at(processor))
      text += "[:" + feature + "+|-]";
    out.push_back(text);
  }
  return out;
}

Expected<const TargetTable*> target_table() {
  static const Expected<TargetTable> table = read_table();
  if (!table)
    return table.error();
  return &table.value();
}

Expected<std::string> canonical_target(std::string_view target, const TargetTable& table) {
  const auto invalid = [&](const std::string& why) {
    return Error(
        ErrorCode::invalid_argument,
        "target '" + std::string(target) + "' is malformed (" + why +
            "; expected a processor and optional features, e.g. gfx90a:sramecc+:xnack-); " +
            supported_list(table));
  };
  const std::size_t colon = target.find(':');
  const std::string processor(target.substr(0, colon));
  if (processor.empty())
    return invalid("no processor");
  const auto known = table.processors.find(processor);
  if (known == table.processors.end())
    return Error(ErrorCode::unsupported, "target '" + std::string(target) +
                                             "' is not supported by the installed HIP toolchain; " +
                                             supported_list(table));
  std::map<std::string, char> features; // sorted by name: the canonical order
  std::string_view rest =
      colon == std::string_view::npos ? std::string_view() : target.substr(colon);
  while (!rest.empty()) {
    rest.remove_prefix(1); // the ':'
    const std::string_view item = rest.substr(0, rest.find(':'));
    rest.remove_prefix(item.size());
    if (item.size() < 2 || (item.back() != '+' && item.back() != '-'))
      return invalid("feature '" + std::string(item) + "' lacks a + or - sign");
    const std::string name(item.substr(0, item.size() - 1));
    if (!known->second.count(name))
      return Error(ErrorCode::unsupported, "target '" + std::string(target) + "': " + processor +
                                               " has no '" + name + "' feature; " +
                                               supported_list(table));
    if (!features.emplace(name, item.back()).second)
      return invalid("feature '" + name + "' given twice");
  }
  std::string canonical = processor;
  for (const auto& [name, sign] : features)
    canonical += ":" + name + sign;
  return canonical;
}

} // namespace jitcache::hip
