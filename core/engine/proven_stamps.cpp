#include "core/engine/proven_stamps.hpp"

#include "core/key/file_stamp.hpp"

#include <algorithm>
#include <utility>

namespace jitcache::detail {

ProvenStamps::ProvenStamps(std::shared_ptr<Watch> watch, unsigned watch_from, bool weigh_folders)
    : m_watch_from(watch_from), m_weigh_folders(weigh_folders), m_watch(std::move(watch)) {}

ProvenStamps::ProvenStamps(FilesystemProbe probe, unsigned watch_from)
    : ProvenStamps(std::make_shared<Watch>(probe), watch_from, false) {}

const std::shared_ptr<ProvenStamps::Watch>& ProvenStamps::process_watch() {
  static const auto* const watch = // never destroyed: used during exit
      new std::shared_ptr<Watch>(std::make_shared<Watch>(probe_filesystem));
  return *watch;
}

ProvenStamps& ProvenStamps::process() {
  static ProvenStamps* const proven =
      new ProvenStamps(process_watch(), 1, true); // used during exit
  return *proven;
}

namespace {
[[maybe_unused]] const bool g_proven_stamps_made_before_main =
    (ProvenStamps::process(), true); // see ForkSafeMutex
} // namespace

bool ProvenStamps::hold(std::string_view encoded) {
  std::optional<FileWatch::Ticket> ticket;
  {
    std::lock_guard<ForkSafeMutex> lock(m_mutex);
    auto it = m_sets.find(encoded); // found by the bytes given: no copy of some 50 KB per proof
    if (it != m_sets.end() && it->second->ticket) {
      std::lock_guard<ForkSafeMutex> watching(m_watch->mutex);
      if (m_watch->files.unchanged_since(*it->second->ticket))
        return true;
    }
    if (it == m_sets.end()) {
      if (m_sets.size() >= k_sets || m_bytes + encoded.size() > k_bytes) {
        m_sets.clear();
        m_bytes = 0;
      }
      auto set = std::make_unique<Proven>();
      set->stamps.assign(encoded);
      const std::string_view name = set->stamps; // the key views the set's own copy
      it = m_sets.emplace(name, std::move(set)).first;
      m_bytes += encoded.size();
    }
    Proven& set = *it->second;
    set.ticket.reset();
    // Watched first, proven after: a change made between the two is either seen by the stat
    // calls or raises an event that the ticket does not cover.
    if (!set.unwatchable && set.proofs >= watch_at(set)) {
      std::lock_guard<ForkSafeMutex> watching(m_watch->mutex);
      ticket = m_watch->files.watch(encoded);
      set.unwatchable = !ticket;
    }
    ++set.proofs;
    ++m_stat_checks;
  }
  const bool held = unchanged(encoded);
  std::lock_guard<ForkSafeMutex> lock(m_mutex);
  if (auto it = m_sets.find(encoded); it != m_sets.end()) {
    if (held)
      it->second->ticket = ticket;
    else {
      m_bytes -= encoded.size();
      m_sets.erase(it);
    }
  }
  return held;
}

unsigned ProvenStamps::watch_at(Proven& set) const {
  if (set.proofs < m_watch_from)
    return m_watch_from; // not weighed yet: a set proven once costs no more than its proof
  if (!set.watch_at) {
    set.watch_at = m_watch_from;
    const auto extent = m_weigh_folders ? extent_of_stamps(set.stamps) : std::nullopt;
    if (extent && extent->files > 0) { // the proofs by stat that cost the folders' watches
      const std::size_t calls = k_calls_per_folder * extent->folders;
      const std::size_t proofs = (calls + extent->files - 1) / extent->files;
      set.watch_at = std::max<std::size_t>(m_watch_from, std::min<std::size_t>(proofs, 1u << 16));
    }
  }
  return *set.watch_at;
}

std::uint64_t ProvenStamps::stat_checks() const {
  std::lock_guard<ForkSafeMutex> lock(m_mutex);
  return m_stat_checks;
}

} // namespace jitcache::detail
