#include "core/tiers/packages/package_target.hpp"

#include "core/key/key_fields.hpp"
#include "core/support/byte_io.hpp"

#include <algorithm>
#include <cctype>

namespace jitcache::detail {

namespace {

// Whether a device field named `name` labels the target; later names in the list win.
int label_rank(std::string_view name) {
  constexpr std::string_view k_names[] = {"device_name", "target", "target_arch"};
  for (int i = 0; i < 3; ++i)
    if (name == k_names[i])
      return i;
  return -1;
}

} // namespace

PackageTarget target_of(std::string_view backend, const std::vector<KeyField>& fields) {
  std::vector<KeyField> device;
  std::copy_if(fields.begin(), fields.end(), std::back_inserter(device),
               [](const KeyField& f) { return f.section == KeySection::device; });
  PackageTarget target{std::string(backend), "unknown", encode_key_fields(device)};
  int rank = -1;
  for (const KeyField& field : device)
    if (label_rank(field.name) >= rank && label_rank(field.name) >= 0) {
      rank = label_rank(field.name);
      target.label = field.value;
    }
  return target;
}

namespace {

// Calls `fn(section, name, value, record)` for each record of key fields in their stored form
// (`record`: its bytes as stored). False when the fields are malformed.
template <typename Fn> bool for_each_stored(std::string_view stored_fields, Fn fn) {
  for (std::string_view in = stored_fields; !in.empty();) {
    const std::string_view record = in;
    const auto section = static_cast<KeySection>(in[0]);
    in.remove_prefix(1);
    std::string_view name, value;
    if (!take_sized<std::uint32_t>(in, name) || !take_sized<std::uint32_t>(in, value))
      return false;
    fn(section, name, value, record.substr(0, record.size() - in.size()));
  }
  return true;
}

} // namespace

std::optional<PackageTarget> target_of_stored(std::string_view backend,
                                              std::string_view stored_fields) {
  // The device section's records, copied as they are stored: the same bytes target_of()
  // encodes, without decoding the rest (hundreds of header fields for a CUB kernel).
  PackageTarget target{std::string(backend), "unknown", {}};
  int rank = -1;
  const bool ok =
      for_each_stored(stored_fields, [&](KeySection section, std::string_view name,
                                         std::string_view value, std::string_view record) {
        if (section != KeySection::device)
          return;
        target.identity += record;
        if (label_rank(name) >= rank && label_rank(name) >= 0) {
          rank = label_rank(name);
          target.label = std::string(value);
        }
      });
  if (!ok)
    return std::nullopt;
  return target;
}

std::optional<std::string> toolchain_of_stored(std::string_view stored_fields) {
  std::string toolchain;
  const bool ok = for_each_stored(stored_fields, [&](KeySection section, std::string_view,
                                                     std::string_view, std::string_view record) {
    if (section == KeySection::toolchain)
      toolchain += record;
  });
  if (!ok)
    return std::nullopt;
  return toolchain;
}

std::string package_file_name(const PackageTarget& target) {
  std::string name = target.backend + "-" + target.label;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      c = '_';
  return name + ".jcpkg";
}

} // namespace jitcache::detail
