#pragma once

#include <jitcache/expected.hpp>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::hip {

/// The targets the installed toolchain compiles: each processor comgr lists (gfx906, ...) with
/// the target features it takes (sramecc, xnack), from comgr's ISA metadata.
struct TargetTable {
  std::map<std::string, std::set<std::string>> processors; ///< ordered by name
  std::string comgr_version;
  friend bool operator==(const TargetTable& a, const TargetTable& b) {
    return a.processors == b.processors && a.comgr_version == b.comgr_version;
  }

  /// "gfx1030", "gfx90a[:sramecc+|-][:xnack+|-]", ... in gfx number order.
  std::vector<std::string> describe() const;
};

/// Reads comgr's ISA list (once per process; later calls return the same table). Thread-safe.
/// Errors: runtime_missing (no comgr), runtime_error (comgr lists no amdgcn-amd-amdhsa ISA).
Expected<const TargetTable*> target_table();

/// Validates a target id ("gfx90a", "gfx90a:xnack+:sramecc-") against `table` and returns it
/// canonical: features sorted by name, as the compiler writes them into the code object
/// ("gfx90a:sramecc-:xnack+"). This runs before every hipRTC call because hipRTC 5.2 aborts
/// the process (munmap_chunk(): invalid pointer) on any target it does not know.
/// Errors: invalid_argument (malformed: empty, a feature without +/-, a feature named twice),
/// unsupported (unknown processor, or a feature the processor does not take); both messages
/// list the supported targets.
Expected<std::string> canonical_target(std::string_view target, const TargetTable& table);

} // namespace jitcache::hip
