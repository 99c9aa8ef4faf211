#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/support/mapped_file.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/packages/package_format.hpp"
#include "core/tuning/tuning_record.hpp"

#include <iostream>
#include <optional>

namespace jitcache::cli {

using detail::to_entry;
using detail::view_entry;

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
      auto visited = (*store)->visit_tuning(key, [&](std::string_view stored) {
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
  out.emit(
      {{"file", file},
       {"backend", p.target.backend},
       {"target", p.target.label},
       {"imported", imported},
       {"kept", kept},
       {"damaged", damaged}},
      "imported " + std::to_string(imported) + " " + p.target.backend + " " + p.target.label +
          " entries from " + file +
          (kept ? " (" + std::to_string(kept) + " tuning records kept: the user tier's own)" : "") +
          (damaged ? " (" + std::to_string(damaged) + " damaged, left out)" : ""));
  return damaged ? 1 : 0;
}

} // namespace jitcache::cli
