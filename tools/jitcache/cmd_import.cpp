#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/key/manifest.hpp"
#include "core/key/portable_manifest.hpp"
#include "core/support/mapped_file.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/packages/package_format.hpp"
#include "core/tuning/tuning_record.hpp"

#include <iostream>
#include <optional>

namespace jitcache::cli {

using detail::to_entry;
using detail::view_entry;

namespace {

// Proves the portable manifest `bytes` (named `name`) here and stores it as this machine's
// manifest of `backend`'s request: its key under `name`, its files' paths beside it, as
// PendingKey remembers them. Whether it was proven; false also for bytes that are not one.
// Errors: the user tier's.
Expected<bool> remember_proven(detail::LmdbStore& store, const std::string& backend,
                               const Digest& name, std::string_view bytes,
                               detail::InstalledFiles& installed) {
  auto manifest = detail::decode_portable(bytes);
  auto key = manifest ? detail::decode_key(manifest->key) : std::nullopt;
  if (!key || key->backend != backend)
    return false;
  auto proven = detail::prove_portable(*manifest, installed);
  auto guards = proven ? detail::guards_of(proven->deps, &detail::real_time_ns) : std::nullopt;
  if (!guards)
    return false;
  detail::Records records;
  records[name] = detail::encode_record({*guards, std::move(manifest->key)});
  records[detail::paths_name(name)] =
      detail::encode_record({{}, detail::encode_paths(proven->deps)});
  if (auto put = store.put_records(records); !put)
    return std::move(put).error();
  return true;
}

} // namespace

int run_import(const Config& config, const std::string& file, const Output& out) {
  if (auto ok = may_change(config); !ok)
    return fail(ok.error());
  auto mapped = detail::MappedFile::open(file);
  if (!mapped)
    return fail(Error(ErrorCode::io_error, "package " + mapped.error().message));
  auto reader = detail::PackageReader::open((*mapped)->bytes());
  if (!reader)
    return fail(
        Error(ErrorCode::corrupt, file + ": " + reader.error().message + "; nothing imported"));
  auto store = open_user_tier(config, true);
  if (!store)
    return fail(store.error());
  std::uint64_t imported = 0, damaged = 0, kept = 0;
  for (std::size_t i = 0; i < reader->size(); ++i) {
    // A copy, read under the fault guard: the file can be copied over while it is mapped.
    auto entry = reader->read_at(i);
    if (!entry)
      return fail(Error(ErrorCode::corrupt, file + ": " + entry.error().message + "; " +
                                                std::to_string(imported) + " imported"));
    const auto& [key, bytes] = *entry;
    auto view = view_entry(key, bytes);
    std::optional<tuning::Record> record;
    if (view && view->backend == tuning::k_tuning_backend) {
      if (auto decoded = tuning::decode_record(key, *view))
        record = std::move(*decoded);
      else
        view = std::move(decoded).error();
    }
    if (!view) {
      ++damaged;
      std::cerr << "jitcache: warn: " << file << ": entry " << key.hex() << " is damaged ("
                << view.error().message << "); not imported\n";
      continue;
    }
    Expected<void> put;
    if (record) {
      // A package of tuning records goes into the tuning database, each record marked as
      // copied from a package; a valid record the user tier has (its own measurement, or an
      // earlier import) is kept: the user's database is above the packages.
      bool have = false;
      auto visited = (*store)->visit_tuning(key, [&have, &key = key](std::string_view stored) {
        have = static_cast<bool>(tuning::decode_record(key, stored));
      });
      if (visited && have) {
        ++kept;
        continue;
      }
      record->method = tuning::Method::system;
      put = (*store)->put_tuning(key, tuning::encode_record(*record));
    } else {
      put = (*store)->put(key, to_entry(*view));
    }
    if (!put)
      return fail(put.error());
    ++imported;
  }
  const detail::Provenance& p = reader->provenance();
  // The portable manifests, proven here, become this machine's manifests: the first request
  // after the import takes its key without reading the headers (see remember_proven).
  // A record that cannot be read costs its request one read of its headers: left out, as a
  // damaged entry is.
  std::uint64_t manifests = 0, unproven = 0;
  detail::InstalledFiles installed;
  for (std::size_t i = 0; i < reader->record_count(); ++i) {
    auto record = reader->read_record_at(i);
    if (!record) {
      ++damaged;
      std::cerr << "jitcache: warn: " << file << ": " << record.error().message
                << "; not imported\n";
      continue;
    }
    auto proven =
        remember_proven(**store, p.target.backend, record->first, record->second, installed);
    if (!proven)
      return fail(proven.error());
    ++(*proven ? manifests : unproven);
  }
  out.emit(
      {{"file", file},
       {"backend", p.target.backend},
       {"target", p.target.label},
       {"imported", imported},
       {"kept", kept},
       {"damaged", damaged},
       {"manifests", manifests},
       {"manifests_unproven", unproven}},
      "imported " + std::to_string(imported) + " " + p.target.backend + " " + p.target.label +
          " entries from " + file +
          (manifests ? " and " + std::to_string(manifests) + " manifests" : "") +
          (unproven ? " (" + std::to_string(unproven) +
                          " manifests not proven here: their requests read their headers once)"
                    : "") +
          (kept ? " (" + std::to_string(kept) + " tuning records kept: the user tier's own)" : "") +
          (damaged ? " (" + std::to_string(damaged) + " damaged, left out)" : ""));
  return damaged ? 1 : 0;
}

} // namespace jitcache::cli
