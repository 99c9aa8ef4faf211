#pragma once

#include "tools/jitcache/output.hpp"

#include <jitcache/config.hpp>

#include <string>
#include <vector>

namespace jitcache::cli {

/// Options of `jitcache build` (and later `explain`), per DESIGN.md's CLI contract.
struct BuildOptions {
  std::string backend;
  int device = 0;
  std::string arch;
  std::string options;
  bool wait = false; ///< build: store before reporting (JITCACHE_OPENCL_STORE=wait)
  std::string max_source_size = "64M"; ///< the largest source file read (detail::read_regular_file)
  std::vector<std::string> files;
};

/// Each command returns the process exit status: 0 on success, 1 on failure (after printing a
/// one-line error to stderr).
int run_build(const Config& config, const BuildOptions& options, const Output& out);
int run_stats(const Config& config, const Output& out);
int run_list(const Config& config, const Output& out);
int run_info(const Config& config, const Output& out);
int run_verify(const Config& config, const Output& out);
int run_clear(const Config& config, const Output& out);
/// `jitcache clear --runtime-caches`: one line per runtime or binding cache of
/// core/runtime_caches (its directory, size, whether it is there) and, unless `dry_run`, removes
/// each directory present. Symlinks are removed, never followed. A directory that is a root, HOME,
/// XDG_CACHE_HOME or holds jitcache's own cache is refused (exit 1), as is a failed removal.
int run_clear_runtime_caches(const Config& config, bool dry_run, const Output& out);
/// `jitcache prune`: evicts least recently used entries until the user tier holds at most
/// `max_size` (a size as parse_size reads it; empty = JITCACHE_MAX_SIZE, and no eviction when
/// that is unset too), removes compile leases left by killed processes, and compacts the data
/// file when no other process has it open.
int run_prune(const Config& config, const std::string& max_size, const Output& out);
/// `jitcache store`: makes each request of each request file (core/request_record, written by a
/// process that handed its stores over, Config::opencl_store) again and stores its binary when
/// its key is still the recorded one; one line per request (outcome stored, present or
/// dropped, with why). A file another `jitcache store` holds is skipped; `remove`: each file is
/// removed once done. Exit 1 when a file cannot be opened.
int run_store(const std::vector<std::string>& files, bool remove, const Output& out);
/// `jitcache explain`: every key field of each request, and how it differs from entries stored
/// earlier for the same source.
int run_explain(const Config& config, const BuildOptions& options, const Output& out);

} // namespace jitcache::cli
