#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/entry_codec.hpp"
#include "core/mapped_file.hpp"
#include "core/package_format.hpp"
#include "core/tuning_record.hpp"

#include <iostream>

namespace jitcache::cli {

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
  std::uint64_t imported = 0, damaged = 0;
  for (std::size_t i = 0; i < reader->size(); ++i) {
    const auto [key, bytes] = reader->at(i);
    auto view = view_entry(key, bytes);
    if (view && view->backend == tuning::k_tuning_backend)
      if (auto record = tuning::decode_record(key, *view); !record)
        view = std::move(record).error();
    if (!view) {
      ++damaged;
      std::cerr << "jitcache: warn: " << file << ": entry " << key.hex() << " is damaged ("
                << view.error().message << "); not imported\n";
      continue;
    }
    // A package of tuning records goes into the tuning database, any other into the entries.
    auto put = view->backend == tuning::k_tuning_backend ? (*store)->put_tuning(key, bytes)
                                                         : (*store)->put(key, to_entry(*view));
    if (!put)
      return fail(put.error());
    ++imported;
  }
  const detail::Provenance& p = reader->provenance();
  out.emit({{"file", file},
            {"backend", p.target.backend},
            {"target", p.target.label},
            {"imported", imported},
            {"damaged", damaged}},
           "imported " + std::to_string(imported) + " " + p.target.backend + " " + p.target.label +
               " entries from " + file +
               (damaged ? " (" + std::to_string(damaged) + " damaged, left out)" : ""));
  return damaged ? 1 : 0;
}

} // namespace jitcache::cli
