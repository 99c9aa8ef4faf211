#include "core/key/known_parts.hpp"

namespace jitcache::detail {

KnownParts& KnownParts::process() {
  static KnownParts* const known = new KnownParts;
  return *known;
}

namespace {
[[maybe_unused]] const bool g_known_parts_made_before_main =
    (KnownParts::process(), true); // see ForkSafeMutex
} // namespace

std::optional<PartNames> KnownParts::names(const Dependencies::Vouched* scan) {
  const std::lock_guard<ForkSafeMutex> lock(m_mutex);
  auto it = m_names.find(scan);
  return it == m_names.end() ? std::nullopt : std::optional(it->second.second);
}

void KnownParts::add_names(const std::shared_ptr<const Dependencies::Vouched>& scan,
                           const PartNames& names) {
  // The scan's own guards, without a copy: held as long as the bytes are.
  std::shared_ptr<const std::string> guards(scan, &scan->guards);
  const std::lock_guard<ForkSafeMutex> lock(m_mutex);
  if (m_names.size() >= k_known)
    m_names.clear();
  m_names[scan.get()] = {scan, names};
  if (m_bytes.size() >= k_known)
    m_bytes.clear();
  m_bytes[names.guards] = std::move(guards);
}

std::shared_ptr<const std::string> KnownParts::bytes(const Digest& name) {
  const std::lock_guard<ForkSafeMutex> lock(m_mutex);
  auto it = m_bytes.find(name);
  return it == m_bytes.end() ? nullptr : it->second;
}

void KnownParts::add_bytes(const Digest& name, std::shared_ptr<const std::string> bytes) {
  const std::lock_guard<ForkSafeMutex> lock(m_mutex);
  if (m_bytes.size() >= k_known)
    m_bytes.clear();
  m_bytes[name] = std::move(bytes);
}

void KnownParts::forget() {
  const std::lock_guard<ForkSafeMutex> lock(m_mutex);
  m_names.clear();
  m_bytes.clear();
}

} // namespace jitcache::detail
