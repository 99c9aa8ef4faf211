#pragma once

#include <jitcache/digest.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace jitcache::detail {

/// One stored entry as eviction sees it.
struct EvictionCandidate {
  Digest key;
  std::uint64_t bytes = 0;       ///< what it takes in the data file (entry_footprint)
  std::uint64_t last_use = 0;    ///< AccessLog::now_us() of its last recorded use; 0 = unknown
  std::uint64_t value_bytes = 0; ///< its stored value's size (what is reported as evicted)
};

/// The entries to remove so that `total` (the stored size of all candidates) falls to `target`
/// or below: least recently used first (ties: larger first, then key order, so that the choice
/// is deterministic). `keep` (the entry being stored) is never chosen. Returns every other
/// candidate when even that is not enough. Pure function.
std::vector<EvictionCandidate> choose_victims(std::vector<EvictionCandidate> candidates,
                                              std::uint64_t total, std::uint64_t target,
                                              const std::optional<Digest>& keep);

/// Where automatic eviction stops once the limit is passed: 90% of it, so that one pass makes
/// room for many stores instead of scanning the tier on every one.
inline std::uint64_t eviction_target(std::uint64_t limit) {
  return limit - limit / 10;
}

/// What an entry whose value has `value_bytes` takes in an LMDB data file of `page_size` pages,
/// as the size limit counts it: a value too large for a leaf node (about half a page) is kept
/// on overflow pages, which are whole pages, plus its node; a smaller one, its node. Each entry
/// also has a node in the database of use times. Keys are digests (32 bytes).
inline std::uint64_t entry_footprint(std::uint64_t value_bytes, std::uint64_t page_size) {
  constexpr std::uint64_t k_page_header = 16, k_node = 8 + 32, k_slot = 2;
  constexpr std::uint64_t k_use_node = k_node + 8 + k_slot;
  const std::uint64_t node_max = (((page_size - k_page_header) / 2) & ~std::uint64_t(1)) - k_slot;
  if (k_node + value_bytes <= node_max)
    return k_node + value_bytes + k_slot + k_use_node;
  const std::uint64_t pages = (value_bytes + k_page_header + page_size - 1) / page_size;
  return pages * page_size + k_node + 8 + k_slot + k_use_node;
}

/// The most a data file under the size limit `limit` may take on disk: the limit plus slack for
/// what the limit does not count (LMDB's branch pages, its free list and the pages freed by the
/// last writes, not yet reused; manifests): an eighth of the limit, at least 256 KiB. The user
/// tier's map is never grown past it (a write that needs more evicts first; see LmdbStore).
inline std::uint64_t file_bound(std::uint64_t limit) {
  constexpr std::uint64_t k_min_slack = 256 << 10;
  return limit + std::max(limit / 8, k_min_slack);
}

/// The largest LMDB map under the size limit `limit`: file_bound(limit) in whole pages of any
/// size LMDB supports (64 KiB multiples).
inline std::uint64_t map_bound(std::uint64_t limit) {
  return file_bound(limit) & ~std::uint64_t(0xffff);
}

} // namespace jitcache::detail
