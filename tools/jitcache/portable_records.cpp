#include "tools/jitcache/portable_records.hpp"

#include "core/key/manifest.hpp"
#include "core/key/portable_manifest.hpp"

#include <map>

namespace jitcache::cli {

Expected<PortableRecords> portable_records(detail::LmdbStore& store, const std::string& backend,
                                           const std::set<Digest>& keys) {
  // The remembered keys first (a record's bytes are valid only during the scan), then their
  // parts and the files, read outside the store's transaction.
  std::map<Digest, detail::Record> remembered;
  auto scanned = store.for_each_record([&](const Digest& name, std::string_view bytes) {
    auto record = detail::view_record(bytes);
    if (!record || record->payload_part)
      return;
    auto key = detail::decode_key(record->payload);
    if (key && key->backend == backend && keys.count(key->digest))
      remembered.emplace(name, detail::Record{std::string(record->guards),
                                              std::string(record->payload), record->guards_part});
  });
  if (!scanned)
    return std::move(scanned).error();
  std::optional<Error> failed; // reading a part
  const auto whole = [&](const detail::Record& record) {
    return detail::with_parts(
        {record.guards, record.payload, record.guards_part, record.payload_part},
        [&](const Digest& part) -> std::optional<std::string> {
          auto bytes = store.get_record(part);
          if (!bytes)
            failed = std::move(bytes).error();
          return bytes ? std::move(*bytes) : std::nullopt;
        });
  };
  PortableRecords out;
  detail::InstalledFiles installed;
  for (auto& [name, named] : remembered) {
    auto paths = store.get_record(detail::paths_name(name));
    if (!paths)
      return std::move(paths).error();
    auto stored = *paths ? detail::decode_record(**paths) : std::nullopt;
    auto record = whole(named);
    stored = stored ? whole(*stored) : std::nullopt;
    if (failed)
      return std::move(*failed);
    if (!record || !stored)
      continue;
    if (!detail::unchanged(record->guards)) {
      ++out.stale;
      continue;
    }
    auto manifest = detail::make_portable(std::move(record->payload), stored->payload, installed);
    if (!manifest || !detail::unchanged(record->guards)) // read as the key was built from them
      continue;
    for (const detail::PortableFile& file : manifest->files)
      ++(file.installed ? out.vouched : out.hashed);
    out.records.push_back({name, detail::encode_portable(*manifest)});
  }
  return out;
}

} // namespace jitcache::cli
