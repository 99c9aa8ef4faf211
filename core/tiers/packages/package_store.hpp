#pragma once

#include "core/support/mapped_file.hpp"
#include "core/tiers/packages/embedded_packages.hpp"
#include "core/tiers/packages/package_format.hpp"

#include <jitcache/key.hpp>
#include <jitcache/store.hpp>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace jitcache::detail {

/// One package of a PackageStore: where it came from and its reader.
struct OpenPackage {
  std::string name;                       ///< the file's path, or the embedded package's name
  PackageReader reader;                   ///< over `file`'s bytes, or the linked bytes
  std::shared_ptr<const MappedFile> file; ///< null for an embedded package
};

/// A read-only tier over packages (core/tiers/packages/package_format): the system tier (files on
/// JITCACHE_SYSTEM_PATH, mapped) or the embedded tier (bytes linked into the program). A lookup
/// asks each package in order (a binary search of its index) and verifies the entry it finds
/// (view_entry) before handing it over: in place for linked bytes; copied out of a mapped file
/// first, under the fault guard (the file can be copied over in place while it is mapped: a
/// fault or a change is a damaged miss, never a crash, and the bytes verified are those used). An
/// entry failing verification is a miss: one warning per package and key, counted once in
/// corrupt_seen(). When two packages hold the same key with different bytes, the first in order
/// wins and one warning names both. Thread-safe.
class PackageStore : public Store {
public:
  /// A tier named `name` ("system", "embedded") over `packages`, asked in this order.
  PackageStore(std::string name, std::vector<OpenPackage> packages);

  /// The system tier: every package named by `path` (JITCACHE_SYSTEM_PATH: files, and folders
  /// whose `*.jcpkg` files count, in name order). An entry that does not exist, is not a regular
  /// file or folder, or holds a package that is damaged, truncated or of another format gets
  /// one warning naming it and is skipped; the rest is used. `quiet_if_absent`: an entry that
  /// does not exist is skipped silently (the build's default folder, before anything is
  /// installed there).
  static std::shared_ptr<PackageStore> open_system(const std::vector<std::filesystem::path>& path,
                                                   bool quiet_if_absent);
  /// The embedded tier over `packages` (bytes linked into the program; no file is touched). A
  /// damaged one gets one warning naming it and is skipped.
  static std::shared_ptr<PackageStore> open_embedded(const std::vector<EmbeddedPackage>& packages);

  /// The packages in lookup order (for `jitcache packages`).
  const std::vector<OpenPackage>& packages() const { return m_packages; }
  /// Whether some package serves `backend`.
  bool serves_backend(const std::string& backend) const;
  /// The compiler identities (Provenance::toolchains) of the packages serving `target`, each
  /// once, in lookup order.
  std::vector<std::string> toolchains(const PackageTarget& target) const;
  /// The bytes of the record named `name` (PackageRecord) in the first package serving `backend`
  /// that holds it, in lookup order; std::nullopt when none does. A package whose record cannot
  /// be read (damaged, or its file changed under its map) gets one warning per package and is
  /// skipped. Never throws an error of the packages; cheap when no package serves `backend` (a
  /// comparison per package).
  std::optional<std::string> record(const std::string& backend, const Digest& name) const;
  /// Called on a lookup of `key` that reached this tier: when packages serve key.backend but
  /// none the key's target (its device fields), one notice per process, tier and backend names
  /// the target and what is installed. Cheap once noticed or found.
  void check_target(const Key& key);
  /// Damaged entries found since the store was made, each once (the core counts each as
  /// `corrupt`).
  std::uint64_t corrupt_seen() const { return m_corrupt.load(); }

  std::string name() const override { return m_name; }
  bool writable() const override { return false; }
  Expected<std::optional<Entry>> get(const Digest& key) override;
  /// Damaged: the first package holding `key` has it damaged (reported once per package and
  /// key, a miss after that) and no later one has it intact; a hit past a damaged copy carries
  /// the damage's reason.
  Expected<Visit> visit(const Digest& key,
                        const std::function<void(const EntryView&)>& use) override;
  /// Errors: read_only, always.
  Expected<void> put(const Digest& key, const Entry& entry) override;
  /// Errors: read_only, always.
  Expected<bool> remove(const Digest& key) override;
  /// Every entry of every package, in package order (a key served twice is listed twice).
  Expected<void> for_each(const std::function<void(const Item&)>& fn) override;

private:
  /// Hands the first package's verified entry for `key` to `use`; says what it found.
  Visit find(const Digest& key, const std::function<void(const EntryView&)>& use);
  void check_duplicates(const Digest& key, std::size_t first, std::string_view bytes);

  std::string m_name;
  std::vector<OpenPackage> m_packages;
  std::atomic<std::uint64_t> m_corrupt{0};
  std::mutex m_mutex;
  std::set<std::string> m_checked; ///< backend + target identities found served (or noticed)
  std::set<std::pair<std::size_t, Digest>> m_damaged; ///< (package, key) found damaged
};

} // namespace jitcache::detail
