#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/engine/runtime_caches.hpp"
#include "core/tiers/user/dir_size.hpp"
#include "core/tiers/user/lmdb_store.hpp"
#include "core/tiers/user/user_store.hpp"

namespace jitcache::cli {

using detail::dir_usage;
using detail::DirUsage;
using detail::LmdbStore;
using detail::runtime_caches;
using detail::RuntimeCache;
using detail::user_store_dir;

int run_clear(const Config& config, const Output& out) {
  if (!has_user_tier(config)) {
    if (!has_use_log(config)) {
      out.emit({{"cleared", 0}, {"bytes", 0}}, "nothing to clear");
      return 0;
    }
    // The counters told before there was a data file (runs that packages served).
    if (auto ok = may_change(config); !ok)
      return fail(ok.error());
    auto dropped = drop_logged_counters(config);
    if (!dropped)
      return fail(dropped.error());
    if (*dropped != detail::LoggedDrop::tier) {
      out.emit({{"cleared", 0}, {"bytes", 0}}, "cleared the counters (no entries were stored)");
      return 0;
    }
  } // the tier has a data file (made meanwhile, perhaps): it is cleared
  if (auto ok = may_change(config); !ok)
    return fail(ok.error());
  // Without reading the tree when nobody has it open: that works on a file however damaged.
  auto discarded = LmdbStore::discard(user_store_dir(config));
  if (!discarded)
    return fail(discarded.error());
  if (discarded->done) {
    if (!discarded->counted) {
      out.emit({{"cleared", nullptr}, {"bytes", nullptr}},
               "cleared the user tier (too damaged to count its entries)");
      return 0;
    }
    out.emit({{"cleared", discarded->entries}, {"bytes", discarded->bytes}},
             "cleared " + std::to_string(discarded->entries) + " entries (" +
                 format_size(discarded->bytes) + ")");
    return 0;
  }
  auto store = open_user_tier(config, true);
  if (!store)
    return fail(store.error());
  auto usage = (*store)->usage();
  if (!usage)
    return fail(usage.error());
  if (auto cleared = (*store)->clear(); !cleared)
    return fail(cleared.error());
  out.emit({{"cleared", usage->entries}, {"bytes", usage->value_bytes}},
           "cleared " + std::to_string(usage->entries) + " entries (" +
               format_size(usage->value_bytes) + ")");
  return 0;
}

namespace {

// A location that holds more than one runtime's cache (a root, HOME, XDG_CACHE_HOME itself) or
// jitcache's own: a variable set to it is a mistake that removal must not act on.
std::string too_broad(const Config& config, const std::filesystem::path& dir) {
  const std::filesystem::path d = dir.lexically_normal();
  if (d == d.root_path() || d.relative_path().empty())
    return "a filesystem root";
  for (const char* name : {"HOME", "XDG_CACHE_HOME"}) {
    auto it = config.variables.find(name);
    if (it != config.variables.end() && !it->second.empty() &&
        std::filesystem::path(it->second).lexically_normal() == d)
      return std::string("$") + name + " itself";
  }
  const std::string own = config.cache_dir.lexically_normal().string();
  const std::string mine = d.string();
  if (!own.empty() && (own == mine || own.rfind(mine + "/", 0) == 0))
    return "jitcache's own cache directory";
  return {};
}

} // namespace

int run_clear_runtime_caches(const Config& config, bool dry_run, const Output& out) {
  int status = 0;
  for (const RuntimeCache& cache : runtime_caches(config)) {
    const DirUsage usage = dir_usage(cache.dir.string());
    nlohmann::json line = {{"name", cache.name},         {"backend", cache.backend},
                           {"variable", cache.variable}, {"dir", cache.dir.string()},
                           {"present", usage.present},   {"bytes", usage.bytes},
                           {"files", usage.files},       {"removed", false}};
    std::string text = cache.name + " (" + cache.variable +
                       "): " + (cache.dir.empty() ? "unknown (HOME unset)" : cache.dir.string());
    if (!usage.present) {
      out.emit(line, text + ": absent");
      continue;
    }
    text += ": " + format_size(usage.bytes) + " in " + std::to_string(usage.files) + " files";
    if (const std::string why = too_broad(config, cache.dir); !why.empty()) {
      line["error"] = "not removed: " + why;
      out.emit(line, text + ", not removed: " + why);
      status = 1;
      continue;
    }
    if (dry_run) {
      out.emit(line, text + ", would be removed");
      continue;
    }
    // remove_all never follows a symlink: a link inside the tree, or the cache path itself
    // being one, is removed as a link and its target is left alone.
    std::error_code ec;
    std::filesystem::remove_all(cache.dir, ec);
    if (ec) {
      line["error"] = ec.message();
      out.emit(line, text + ", not removed: " + ec.message());
      status = 1;
      continue;
    }
    line["removed"] = true;
    out.emit(line, text + ", removed");
  }
  return status;
}

} // namespace jitcache::cli
