#pragma once

// When the user tier's data file is checked page by page (core/tiers/user/lmdb_page_check.hpp), and
// the marker of a clean end that lets a process skip the check. Internal to the user tier.
//
// LMDB survives a crash of its own writers, but it trusts its pages: bytes damaged on disk make
// it crash, abort or grow without bound, above all while writing. So the pages are checked
//  - at open, by the first process to open the environment (its gate free to take exclusively)
//    when the last one did not end cleanly (no `closed` marker: it crashed, was killed, or
//    found damage); a damaged file is then moved aside at once;
//  - before the first write of every process that did not check at open (damage done while no
//    process had the file open, or by another process's fault): a damaged file is not written;
//    it is marked, and moved aside by the next open;
//  - by `jitcache verify`, always.

#include "core/tiers/user/env_gate.hpp"
#include "core/tiers/user/lmdb_env.hpp"

#include <filesystem>
#include <string>

namespace jitcache::detail {

/// At open, after LMDB opened the environment in `cache` (no transaction begun yet): when this
/// process is the only one with the environment open and the last one did not end cleanly, checks
/// the pages and returns the problem, holding `gate` exclusively (so the caller can move the file
/// aside at once); otherwise returns empty, `gate` held shared. `checked` says whether the pages
/// were checked. (The clean-end marker is taken away before a process's first write, see
/// check_before_first_write, and stays away until the last process closes cleanly.)
std::string damage_after_unclean_end(const CacheDir& cache, EnvGate& gate, bool& checked);

/// After mdb_env_close of a writable environment: when no other process has it open (the gate
/// free to take exclusively) and no transaction found it damaged, leaves the clean-end marker.
void mark_clean_end(const CacheDir& cache, EnvGate& gate);

/// Before the first write of this process to `e` (once; later calls return the first answer):
/// takes the clean-end marker away, and checks the pages of the current snapshot unless they were
/// checked at open. Returns MDB_SUCCESS, or MDB_CORRUPTED when they are damaged (the environment is
/// then poisoned, see Env::poison: never used again by this process, and moved aside by the next
/// open). Thread-safe.
int check_before_first_write(LmdbStore::Env& e);

} // namespace jitcache::detail
