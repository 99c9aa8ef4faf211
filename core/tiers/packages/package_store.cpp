#include "core/tiers/packages/package_store.hpp"

#include "core/support/fault_guard.hpp"
#include "core/support/log.hpp"
#include "core/tiers/entry_codec.hpp"

#include <algorithm>
#include <cstring>

namespace jitcache::detail {

namespace fs = std::filesystem;

namespace {

// One warning per process for each thing wrong with the packages (every Cache opens them).
void warn_once(const std::string& message) {
  log::write_once(LogLevel::warn, "package:" + message, message);
}

std::optional<OpenPackage> open_package(std::string name, std::string_view bytes,
                                        std::shared_ptr<const MappedFile> file) {
  auto reader = PackageReader::open(bytes);
  if (!reader) {
    warn_once(name + ": " + reader.error().message + "; skipped");
    return std::nullopt;
  }
  return OpenPackage{std::move(name), std::move(*reader), std::move(file)};
}

void add_file(const fs::path& path, std::vector<OpenPackage>& packages) {
  auto file = MappedFile::open(path);
  if (!file) {
    warn_once("package " + file.error().message + "; skipped");
    return;
  }
  const std::string_view bytes = (*file)->bytes();
  if (auto package = open_package(path.string(), bytes, std::move(*file)))
    packages.push_back(std::move(*package));
}

// The entry `package` holds for `key`, verified, handed to `use`; false when it holds none,
// the error when its entry is damaged. A mapped file's entry is copied out under the fault guard
// before it is verified (PackageReader::read): a file copied over in place faults (SIGBUS past
// its new end) or changes under its map, and what was verified must be what `use` gets. Linked
// bytes cannot change: they are verified and used in place.
Expected<bool> read_entry(const OpenPackage& package, const Digest& key,
                          const std::function<void(const EntryView&)>& use) {
  std::optional<std::string> copied;
  std::optional<std::string_view> bytes;
  if (!package.file) {
    bytes = package.reader.find(key);
  } else {
    auto read = package.reader.read(key);
    if (!read)
      return std::move(read).error();
    copied = std::move(*read);
    if (copied)
      bytes = *copied;
  }
  if (!bytes)
    return false;
  auto view = view_entry(key, *bytes);
  if (!view)
    return std::move(view).error();
  use(*view);
  return true;
}

std::string describe(const OpenPackage& package) {
  const Provenance& p = package.reader.provenance();
  return fs::path(package.name).filename().string() + " (" + p.target.label + ", " +
         std::to_string(p.entries) + " entries)";
}

} // namespace

PackageStore::PackageStore(std::string name, std::vector<OpenPackage> packages)
    : m_name(std::move(name)), m_packages(std::move(packages)) {}

std::shared_ptr<PackageStore> PackageStore::open_system(const std::vector<fs::path>& path,
                                                        bool quiet_if_absent) {
  fault::install(); // reads of the mapped files are guarded (read_entry)
  std::vector<OpenPackage> packages;
  for (const fs::path& entry : path) {
    std::error_code ec;
    const fs::file_status status = fs::status(entry, ec);
    if (!fs::exists(status)) {
      if (!quiet_if_absent)
        warn_once("JITCACHE_SYSTEM_PATH: " + entry.string() + " does not exist; skipped");
      continue;
    }
    if (!fs::is_directory(status)) {
      add_file(entry, packages); // refuses what is not a regular file, naming it
      continue;
    }
    std::vector<fs::path> files;
    for (fs::directory_iterator it(entry, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == k_package_suffix)
        files.push_back(it->path());
    if (ec)
      warn_once("JITCACHE_SYSTEM_PATH: cannot list " + entry.string() + " (" + ec.message() +
                "); skipped");
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files)
      add_file(file, packages);
  }
  return std::make_shared<PackageStore>("system", std::move(packages));
}

std::shared_ptr<PackageStore>
PackageStore::open_embedded(const std::vector<EmbeddedPackage>& embedded) {
  std::vector<OpenPackage> packages;
  for (const EmbeddedPackage& package : embedded)
    if (auto opened = open_package("embedded package " + package.name, package.bytes, nullptr))
      packages.push_back(std::move(*opened));
  return std::make_shared<PackageStore>("embedded", std::move(packages));
}

bool PackageStore::serves_backend(const std::string& backend) const {
  return std::any_of(m_packages.begin(), m_packages.end(), [&](const OpenPackage& package) {
    return package.reader.provenance().target.backend == backend;
  });
}

std::vector<std::string> PackageStore::toolchains(const PackageTarget& target) const {
  std::vector<std::string> found;
  for (const OpenPackage& package : m_packages) {
    const Provenance& has = package.reader.provenance();
    if (has.target != target)
      continue;
    for (const std::string& toolchain : has.toolchains)
      if (std::find(found.begin(), found.end(), toolchain) == found.end())
        found.push_back(toolchain);
  }
  return found;
}

std::optional<std::string> PackageStore::record(const std::string& backend,
                                                const Digest& name) const {
  for (const OpenPackage& package : m_packages) {
    if (package.reader.record_count() == 0 || package.reader.provenance().target.backend != backend)
      continue;
    // A copy under the fault guard, for linked bytes too: records are small, and one path is
    // simpler than two.
    auto found = package.reader.read_record(name);
    if (!found) {
      log::write_once(LogLevel::warn, "package-record:" + package.name,
                      package.name + ": " + found.error().message +
                          "; its records are skipped where they cannot be read");
      continue;
    }
    if (*found)
      return std::move(*found);
  }
  return std::nullopt;
}

void PackageStore::check_target(const Key& key) {
  if (!serves_backend(key.backend))
    return;
  // From the stored form: a key recalled from a manifest has no `fields`.
  const auto target = target_of_stored(key.backend, key.stored_fields);
  if (!target)
    return;
  const std::string served_key = key.backend + '\0' + target->identity;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_checked.count(key.backend) || m_checked.count(served_key))
      return;
  }
  std::string installed;
  bool served = false;
  for (const OpenPackage& package : m_packages) {
    const PackageTarget& has = package.reader.provenance().target;
    if (has.backend != key.backend)
      continue;
    served = served || has == *target;
    installed += (installed.empty() ? "" : ", ") + describe(package);
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  m_checked.insert(served ? served_key : key.backend);
  if (!served)
    log::write_once(LogLevel::warn, "package-target:" + m_name + ":" + key.backend,
                    "no " + key.backend + " package for " + target->label + " in the " + m_name +
                        " tier; installed: " + installed + "; its kernels are compiled here");
}

Store::Visit PackageStore::find(const Digest& key,
                                const std::function<void(const EntryView&)>& use) {
  std::string damage; // the first damage reported by this call
  for (std::size_t i = 0; i < m_packages.size(); ++i) {
    const OpenPackage& package = m_packages[i];
    auto found = read_entry(package, key, [&](const EntryView& view) {
      check_duplicates(key, i, view.payload);
      use(view);
    });
    if (found && !*found)
      continue;
    if (!found) {
      std::lock_guard<std::mutex> lock(m_mutex);
      if (m_damaged.insert({i, key}).second) { // each walk of one request sees it again
        ++m_corrupt;
        log::warn(package.name + ": entry " + key.hex() + " is damaged (" + found.error().message +
                  "); treated as a miss");
        if (damage.empty())
          damage = package.name + ": " + found.error().message;
      }
      continue;
    }
    return Visit{Visit::Outcome::hit, std::move(damage)};
  }
  return damage.empty() ? Visit::miss() : Visit::damaged(std::move(damage));
}

void PackageStore::check_duplicates(const Digest& key, std::size_t first,
                                    std::string_view payload) {
  const OpenPackage& winner = m_packages[first];
  for (std::size_t i = first + 1; i < m_packages.size(); ++i) {
    const OpenPackage& other = m_packages[i];
    // The key covers the device fields: packages for other targets cannot hold it.
    if (other.reader.provenance().target != winner.reader.provenance().target)
      continue;
    bool same = false;
    auto found =
        read_entry(other, key, [&](const EntryView& view) { same = view.payload == payload; });
    if (!found || !*found || same)
      continue;
    log::write_once(LogLevel::warn, "package-duplicate:" + winner.name + '\0' + other.name,
                    "packages " + winner.name + " and " + other.name +
                        " serve the same key with different binaries (first: " + key.hex() +
                        "); using " + winner.name + ", the first in lookup order");
  }
}

Expected<std::optional<Entry>> PackageStore::get(const Digest& key) {
  std::optional<Entry> entry;
  find(key, [&](const EntryView& view) { entry = to_entry(view); });
  return entry;
}

Expected<Store::Visit> PackageStore::visit(const Digest& key,
                                           const std::function<void(const EntryView&)>& use) {
  return find(key, use);
}

Expected<void> PackageStore::put(const Digest&, const Entry&) {
  return Error(ErrorCode::read_only, "the " + m_name + " tier is read-only");
}

Expected<bool> PackageStore::remove(const Digest&) {
  return Error(ErrorCode::read_only, "the " + m_name + " tier is read-only");
}

Expected<void> PackageStore::for_each(const std::function<void(const Item&)>& fn) {
  for (const OpenPackage& package : m_packages) {
    const std::string& served = package.reader.provenance().target.backend;
    for (std::size_t i = 0; i < package.reader.size(); ++i) {
      if (!package.file) {
        const auto [key, bytes] = package.reader.at(i);
        const auto backend = verify_entry(key, bytes);
        fn(Item{key, backend ? *backend : served, bytes.size(), bool(backend)});
        continue;
      }
      auto entry = package.reader.read_at(i); // a copy: see read_entry()
      if (!entry) {
        // The file changed under its map: its index can no longer be trusted to name keys.
        warn_once(package.name + ": " + entry.error().message + "; the rest of it not listed");
        break;
      }
      const auto backend = verify_entry(entry->first, entry->second);
      fn(Item{entry->first, backend ? *backend : served, entry->second.size(), bool(backend)});
    }
  }
  return {};
}

} // namespace jitcache::detail
