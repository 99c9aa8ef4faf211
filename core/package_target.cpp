#include "core/package_target.hpp"

#include "core/key_fields.hpp"

#include <algorithm>
#include <cctype>

namespace jitcache::detail {

PackageTarget target_of(std::string_view backend, const std::vector<KeyField>& fields) {
  std::vector<KeyField> device;
  std::copy_if(fields.begin(), fields.end(), std::back_inserter(device),
               [](const KeyField& f) { return f.section == KeySection::device; });
  PackageTarget target{std::string(backend), "unknown", encode_key_fields(device)};
  for (const char* name : {"device_name", "target", "target_arch"}) // the last found wins
    for (const KeyField& field : device)
      if (field.name == name)
        target.label = field.value;
  return target;
}

std::optional<PackageTarget> target_of_stored(std::string_view backend,
                                              std::string_view stored_fields) {
  auto fields = decode_key_fields(stored_fields);
  if (!fields)
    return std::nullopt;
  return target_of(backend, *fields);
}

std::string package_file_name(const PackageTarget& target) {
  std::string name = target.backend + "-" + target.label;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      c = '_';
  return name + ".jcpkg";
}

} // namespace jitcache::detail
