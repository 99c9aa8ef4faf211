#pragma once

#include "core/tiers/user/user_tier.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

namespace jitcache::detail {

/// A user tier that does not exist yet, made on its first write. A new machine's first run
/// whose requests a package serves then loads its first kernel without making an LMDB
/// environment first (its synced writes cost more than a package hit); the tier is made by the
/// first write (a compile's entry; the remembered records). Counters told before the tier was
/// needed (a process whose requests packages served, at exit) are appended to its use log
/// (use_log.hpp) in its folder, made if need be, without opening or making the environment;
/// counters() reads them there until the first write folds them in. A log due a fold, or one
/// that cannot be appended to, is told through the opened tier instead.
///
/// Reads before then find nothing, without making anything: each looks for the data file, and
/// opens the tier when another process has made it meanwhile. The tier, once open, is the
/// opened one in every respect. Opening fails as `open` fails; the failure is returned by that
/// call and every later one (the core then skips the tier, with one warning). Thread-safe.
class DeferredUserTier final : public UserTier {
public:
  using Open = std::function<Expected<std::shared_ptr<UserTier>>()>;
  /// A tier opened by `open` in `dir`, whose data file is `dir / "data.mdb"`. `open` is called
  /// once, or by each of threads that need the tier at the same moment (the first result is
  /// kept, successful or not); it must be safe to call so (LmdbStore::open is).
  DeferredUserTier(std::filesystem::path dir, Open open);

  std::string name() const override { return "user"; }
  /// True until opened (a write is what opens it), then the opened tier's answer.
  bool writable() const override;
  Expected<std::optional<Entry>> get(const Digest& key) override;
  Expected<Visit> visit(const Digest& key,
                        const std::function<void(const EntryView&)>& use) override;
  Expected<void> put(const Digest& key, const Entry& entry) override;
  Expected<void> put(const Digest& key, const Entry& entry, const Stats& counters) override;
  Expected<bool> remove(const Digest& key) override;
  Expected<void> for_each(const std::function<void(const Item&)>& fn) override;
  Expected<bool> visit_record(const Digest& name,
                              const std::function<void(std::string_view)>& use) override;
  Expected<void> put_records(const Records& records) override;
  Expected<bool> visit_tuning(const Digest& name,
                              const std::function<void(std::string_view)>& use) override;
  Expected<void> put_tuning(const Digest& name, std::string_view bytes) override;
  Expected<bool> remove_tuning(const Digest& name) override;
  Expected<void>
  for_each_tuning(const std::function<void(const Digest&, std::string_view)>& fn) override;
  Expected<void> add_counters(const Stats& delta) override;
  Expected<Stats> counters() override;
  Expected<CacheDir> lease_dir() const override;

  /// Opens (makes) the tier now, when not done yet. Errors: the open's, now and at every later
  /// call.
  Expected<void> open();
  /// Whether the tier has been opened (made) in this process.
  bool opened() const;

private:
  /// The opened tier, opening (making) it first.
  Expected<std::shared_ptr<UserTier>> tier() const;
  /// `use` on the opened tier; `nothing` when there is no tier to read yet; the open's error.
  template <typename R, typename Use> R reading(R nothing, Use use) const;
  /// `use` on the tier, opened (made) first; the open's error.
  template <typename Use> auto writing(Use use) const -> decltype(use(std::declval<UserTier&>()));
  /// The opened tier when there is one to read, opening it when its data file now exists and is
  /// not empty (has_data_file); nullptr when there is nothing to read yet.
  Expected<std::shared_ptr<UserTier>> existing() const;
  /// Whether `delta` was appended to the use log in the folder with the tier not opened (see the
  /// class comment); false when it must go through the tier.
  bool told_through_log(const Stats& delta) const;

  const std::filesystem::path m_dir;
  const Open m_open;
  mutable std::mutex m_mutex;
  mutable bool m_tried = false;
  mutable std::shared_ptr<UserTier> m_tier;
  mutable Error m_error{ErrorCode::io_error, ""};
};

} // namespace jitcache::detail
