#include "core/tiers/read_only_store.hpp"

namespace jitcache::detail {

namespace {

Error refused(const std::string& tier) {
  return Error(ErrorCode::read_only, "the " + tier + " tier is read-only (JITCACHE_READONLY)");
}

} // namespace

Expected<void> ReadOnlyStore::put(const Digest&, const Entry&) {
  return refused(name());
}
Expected<bool> ReadOnlyStore::remove(const Digest&) {
  return refused(name());
}

Expected<void> ReadOnlyUserTier::put(const Digest&, const Entry&) {
  return refused(name());
}
Expected<void> ReadOnlyUserTier::put(const Digest&, const Entry&, const Stats&) {
  return refused(name());
}
Expected<bool> ReadOnlyUserTier::remove(const Digest&) {
  return refused(name());
}
Expected<void> ReadOnlyUserTier::put_records(const Records&) {
  return refused(name());
}
Expected<void> ReadOnlyUserTier::put_tuning(const Digest&, std::string_view) {
  return refused(name());
}
Expected<bool> ReadOnlyUserTier::remove_tuning(const Digest&) {
  return refused(name());
}
Expected<void> ReadOnlyUserTier::add_counters(const Stats&) {
  return refused(name());
}

} // namespace jitcache::detail
