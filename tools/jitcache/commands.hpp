#pragma once

#include "tools/jitcache/output.hpp"

#include <jitcache/config.hpp>

#include <optional>
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
  std::string record; ///< build: append each request to this file (as JITCACHE_RECORD does)
  std::vector<std::string> files;
};

/// Options of `jitcache export`.
struct ExportOptions {
  std::string file;          ///< -o: the package to write
  std::string backend;       ///< empty: any
  std::string arch;          ///< the target label to export (sm_90, gfx90a); empty: any
  std::optional<int> device; ///< instead of arch: the target of this device of `backend`
};

/// Options of `jitcache warm`.
struct WarmOptions {
  std::string record;  ///< the JSON-lines file JITCACHE_RECORD (or build --record) wrote
  std::string backend; ///< only this backend's requests; empty: all
  std::string arch;    ///< comma-separated targets (CUDA, HIP); empty: each request's own
  int device = 0;      ///< the OpenCL device
  int jobs = 0;        ///< worker processes; 0: one per core
  std::string into;    ///< a cache directory to fill instead of the user tier (JITCACHE_DIR)
  bool serve = false;  ///< be one of those workers (worker_pool: serve_items)
};

/// Options of `jitcache tune`.
struct TuneOptions {
  std::string command;    ///< list, show, clear or export
  std::string key_prefix; ///< only the records whose key (hex) starts with it; empty: all
  std::string output;     ///< export: the file to write (default: standard output)
};

/// Options of `jitcache tune RECORD`.
struct TuneRecordOptions {
  std::string record;           ///< the JSON-lines file JITCACHE_RECORD wrote
  std::string runner;           ///< the shell command that tunes one problem (its stdin: the line)
  std::string mode = "missing"; ///< JITCACHE_TUNE for the runner: missing, all or retune
  int jobs = 0;                 ///< runners at once; 0: one per core
  double timeout = 0;           ///< seconds a runner may take; 0: no limit
};

/// Options of `jitcache config`.
struct ConfigOptions {
  std::string key;                  ///< empty: list every setting
  std::optional<std::string> value; ///< set KEY to it
  bool unset = false;               ///< remove KEY from the file
};

/// Each command returns the process exit status: 0 on success, 1 on failure (after printing a
/// one-line error to stderr), 2 on a usage error (usage_error: the error, then the usage).
/// `jitcache build`: one line per file; a file that fails has its error on stderr (with a
/// compiler's log) and, with --json, an object {file, backend, outcome "error", code, error} on
/// stdout; the files after it are built unless the error is not the file's own (no such device,
/// a runtime missing). Exit 1 when any file failed.
int run_build(const Config& config, const BuildOptions& options, const Output& out);
int run_stats(const Config& config, const Output& out);
/// `jitcache stats --zero`: every counter of the user tier back to zero, entries kept.
int run_stats_zero(const Config& config, const Output& out);
int run_list(const Config& config, const Output& out);
int run_info(const Config& config, const Output& out);
int run_verify(const Config& config, const Output& out);
int run_clear(const Config& config, const Output& out);
/// `jitcache clear --runtime-caches`: one line per runtime or binding cache of
/// core/engine/runtime_caches (its directory, size, whether it is there) and, unless `dry_run`,
/// removes each directory present. Symlinks are removed, never followed. A directory that is a
/// root, HOME, XDG_CACHE_HOME or holds jitcache's own cache is refused (exit 1), as is a failed
/// removal.
int run_clear_runtime_caches(const Config& config, bool dry_run, const Output& out);
/// `jitcache prune`: evicts least recently used entries until the user tier holds at most
/// `max_size` (a size as parse_size reads it; empty = JITCACHE_MAX_SIZE, and no eviction when
/// that is unset too), removes compile leases left by killed processes, and compacts the data
/// file when no other process has it open.
int run_prune(const Config& config, const std::string& max_size, const Output& out);
/// `jitcache store`: makes each request of each request file (core/record/request_record, written
/// by a process that handed its stores over, Config::opencl_store) again and stores its binary,
/// into the user tier of `config` (a request names what to build, never where: its variables are
/// not read), when its key is still the recorded one; one line per request (outcome stored, present
/// or dropped, with why). Only regular files are read (a FIFO, device or symlink is refused,
/// never waited on), of at most 64 MiB. A file another `jitcache store` holds is skipped;
/// `remove`: each file is renamed FILE.taken once read, before its requests are made (each is
/// tried once), and removed once they are done. `pending` (a cache's `pending` folder, as a
/// hand-over names it): the files are that folder's, it stores into the cache the folder belongs
/// to (its parent), and it cleans the folder. It is then the cache's one store worker: it
/// holds an exclusive flock on the folder's `worker.lock` (core/engine/store_handover) for its
/// whole life, and when another process holds it, returns 0 at once (that worker takes the files).
/// It stores every `*.jsonl` file, 64 at a time, newest first (each tried once, removed once
/// done), until none is left; it then lets go of the lock and lists the folder once more,
/// taking the lock again for a file written meanwhile; one older than a day is removed unread (what
/// it held is missed and handed over again), as are a `*.taken` or `*.part` older than an hour (a
/// store process or a hand-over that died) and anything of those names that is not a regular file.
/// `detach`: forks first and returns 0 at once (1 when fork fails), the child (re-parented to init)
/// doing the work at idle CPU and I/O priority; how a process that hands its stores over starts it
/// (core/engine/store_handover). Exit 1 when a file cannot be opened, is no request file at all
/// (one error naming it: check_record_start), has a line that is no request (dropped, naming the
/// line), or the folder cannot be listed; 2 with neither FILE nor `pending`.
int run_store(const Config& config, const std::vector<std::string>& files,
              const std::string& pending, bool remove, bool detach, const Output& out);
/// `jitcache store --wait [--pending FOLDER] [--timeout SECONDS]`: waits until the pending
/// folder of the user tier of `config` (or `pending`, a cache's pending folder, as a hand-over
/// names it: Cache::wait_for_stores passes its own) holds no request file and no store worker holds
/// its lock. When none does, this process takes the lock and makes the stores left itself, in the
/// foreground (one line per request, as `store`), as the worker would. A progress line on stderr
/// after a second of waiting, then every five. Exit 0 when done (no pending folder: nothing to wait
/// for); 1 with a one-line error at `timeout` seconds (0: no limit) naming the worker's pid and the
/// files left, when a request file could not be read, or under JITCACHE_READONLY.
int run_store_wait(const Config& config, const std::string& pending, double timeout,
                   const Output& out);
/// `jitcache warm`: makes every request of a record again (each once, by key) for every target
/// of `--arch` (CUDA, HIP; else each request's own target) or on the OpenCL `--device`, with
/// `jobs` worker processes (worker_pool: this command with `serve`), into the user tier or
/// `into`. Each replay first proves that it has the recorded key (Backend::replay); a request
/// whose worker died on it fails, naming how. Prints a progress line on a terminal (else a line
/// per request), then a summary row per backend and target. A record line that cannot be read
/// is a warning naming FILE:LINE. Exit 1 when the record cannot be read, a target of
/// `--arch` is unknown (the message lists the supported ones), or any request failed (each
/// named on stderr with its target and the first line of its error).
int run_warm(const Config& config, const WarmOptions& options, const Output& out);
/// `jitcache explain`: every key field of each request, and how it differs from entries stored
/// earlier for the same source.
int run_explain(const Config& config, const BuildOptions& options, const Output& out);

/// `jitcache export`: writes the valid entries of the user tier that match `options` into one
/// package (core/tiers/packages/package_format) at options.file, replaced atomically. Exit 1
/// (naming them) when nothing matches or the matches serve more than one target (a package serves
/// one).
int run_export(const Config& config, const ExportOptions& options, const Output& out);
/// `jitcache import`: copies the package `file`'s verified entries into the user tier (tuning
/// records into its tuning database, as Method::system, except where the user tier already has
/// a valid record of the problem, which is kept and counted `kept`). Exit 1
/// when the package is refused (damaged, truncated, another format: nothing imported) or any
/// entry was damaged (the others are imported).
int run_import(const Config& config, const std::string& file, const Output& out);
/// `jitcache packages`: one line per package found (embedded, then JITCACHE_SYSTEM_PATH): what
/// it serves, its size, the jitcache that made it; then one line per device present (the
/// backends built, devices their runtimes report) naming the package that serves it, or none.
int run_packages(const Config& config, const Output& out);
/// `jitcache tune`: the tuning database of the user tier (jitcache/tuning.hpp). list: one line
/// per record (family, problem, device, parameters, times, method; damaged ones named, with
/// why); show: each record whole (device identity, candidates); export: each record whole as
/// one JSON line, to `output` or standard output (exit 1 when any is damaged; a package form
/// is left to the packages' work); clear: removes them. Never creates a user tier to read.
int run_tune(const Config& config, const TuneOptions& options, const Output& out);
/// `jitcache tune RECORD --runner CMD`: each distinct tuning problem of the record (lines of
/// jitcache/tuning.hpp's RecordedProblem; kernel requests are skipped, any other line is a
/// warning naming FILE:LINE) is handed to a run of CMD (/bin/sh -c, its own process group) on
/// its standard input, with JITCACHE_TUNE=`mode` and without JITCACHE_RECORD, up to `jobs` at
/// once; CMD tunes it (jitcache::tuning::select) and prints tuning::choice_line(). A progress
/// line (see Progress), then a table of the choices. Exit 1 when a runner failed, timed out or
/// printed no choice, each named FILE:LINE on stderr; the others are still tuned.
int run_tune_record(const TuneRecordOptions& options, const Output& out);
/// `jitcache config`: the configuration file (core/config/config_file.hpp). No KEY: one line per
/// setting (its key, value, and where it comes from: environment, file with its line, or
/// default; secrets hidden). KEY: its value (empty for the default). KEY VALUE: sets it in the
/// file, checked first by the setting's parser (a refused value, an unknown key or a key the
/// file may not hold, such as remote_key, is a usage error, exit 2, and nothing is written; a
/// relative path is made absolute). --unset KEY: removes it. Writes are atomic and serialised
/// between processes (detail::write_config_setting); one that fails (a read-only folder, a
/// full disk) is exit 1 with one line naming the file, the old file left as it was.
int run_config(const ConfigOptions& options, const Output& out);
/// `jitcache remote ping|push|pull`.
enum class RemoteAction { ping, push, pull };
/// ping: one line per remote tier of JITCACHE_REMOTE (reachable, round trip, how entries are
/// signed); exit 1 when one is unreachable. push: copies the user tier's valid entries (of
/// `backend` only, when not empty) to each writable remote, signed as the cache would; entries
/// over a remote's max_bytes are skipped. pull: copies each remote's entries that this process
/// would accept (intact, and signed with the key when there is one) into the user tier, leaving
/// those it has. One line per remote (copied, present, skipped, bytes); exit 1 when a remote
/// fails, a push goes to a remote that is not written to, or no remote is configured.
int run_remote(const Config& config, RemoteAction action, const std::string& backend,
               const Output& out);
/// For `jitcache info`: one JSON object per remote tier (reachable or not, writable, signing)
/// after a PING, and the same as text lines appended to `text`.
nlohmann::json describe_remotes(const Config& config, std::string& text);

} // namespace jitcache::cli
