#include "tools/jitcache/backend_table.hpp"
#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/device_target.hpp"

#include "core/tiers/packages/embedded_packages.hpp"
#include "core/tiers/packages/package_store.hpp"

#include <ctime>
#include <filesystem>

namespace jitcache::cli {

namespace {

// Devices a backend is asked about: more than any machine here has.
constexpr int k_max_devices = 16;

std::string utc(std::int64_t seconds) {
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  char text[32] = "?";
  if (gmtime_r(&t, &tm))
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

} // namespace

int run_packages(const Config& config, const Output& out) {
  using detail::PackageStore;
  const std::shared_ptr<PackageStore> tiers[] = {
      PackageStore::open_embedded(detail::embedded_packages()),
      PackageStore::open_system(config.system_path, config.system_path_default)};
  for (const auto& tier : tiers)
    for (const detail::OpenPackage& package : tier->packages()) {
      const detail::Provenance& p = package.reader.provenance();
      out.emit({{"tier", tier->name()},
                {"package", package.name},
                {"backend", p.target.backend},
                {"target", p.target.label},
                {"entries", p.entries},
                {"records", p.records},
                {"bytes", p.bytes},
                {"jitcache_version", p.jitcache_version},
                {"created", utc(p.created)}},
               tier->name() + "  " + package.name + "  " + p.target.backend + " " + p.target.label +
                   ", " + std::to_string(p.entries) + " entries, " + std::to_string(p.records) +
                   " records, " + format_size(p.bytes) + ", made by jitcache " +
                   p.jitcache_version + " on " + utc(p.created));
    }
  for (const char* backend : k_backends) {
    if (!backend_built(backend))
      continue;
    for (int index = 0; index < k_max_devices; ++index) {
      auto target = device_target(config, backend, index);
      if (!target)
        break; // no such device (or no runtime, or no GPU)
      std::string served_by;
      for (const auto& tier : tiers)
        for (const detail::OpenPackage& package : tier->packages())
          if (served_by.empty() && package.reader.provenance().target == *target)
            served_by = package.name;
      out.emit(
          {{"device", index},
           {"backend", backend},
           {"target", target->label},
           {"package", served_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(served_by)},
           {"suggested_name", detail::package_file_name(*target)}},
          std::string(backend) + " device " + std::to_string(index) + " (" + target->label + "): " +
              (served_by.empty()
                   ? "no package (one would be named " + detail::package_file_name(*target) + ")"
                   : "served by " + served_by));
    }
  }
  return 0;
}

} // namespace jitcache::cli
