#pragma once

#include <jitcache/export.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitcache {

/// Log verbosity, least to most.
enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

/// The backends jitcache knows, by name.
inline constexpr const char* k_backends[] = {"opencl", "cuda", "hip"};
/// The interposers (libjitcache-nvrtc, libjitcache-hiprtc), by the name their requests and
/// counters go under: requests an application makes of its runtime, not of jitcache's API.
inline constexpr const char* k_front_ends[] = {"nvrtc", "hiprtc"};

/// When a compiled binary that is slow to read is stored: OpenCL on PoCL, where reading a
/// program's binary compiles every kernel in it (JITCACHE_OPENCL_STORE).
enum class StoreMode {
  /// In this process, on background threads; Cache::flush() and the Cache's destructor wait.
  wait,
  /// By a detached, idle-priority `jitcache store` process that Cache::flush() (or the
  /// destructor) starts and does not wait for; it rebuilds each request over the runtime's own
  /// warm cache and stores the binary. Until it has, a new process misses.
  detach,
};

/// What the tuning database does when a problem is met (JITCACHE_TUNE; see tuning.hpp).
enum class TuneMode {
  /// Use the databases, the heuristic where they are silent; never tune (the default).
  off,
  /// Incremental: tune a problem no database has, once, and keep the result in the user tier.
  missing,
  /// Exhaustive: ignore the system tier and the heuristic; tune every problem the user tier
  /// does not have yet.
  all,
  /// Tune again even the problems the user tier has, replacing their records.
  retune,
  /// Drop the user tier's records of the problems met; answer as `off` would without them.
  clean,
};

/// Whether a backend's persistent tiers are used, and why (for `jitcache info`).
struct PersistencePolicy {
  bool enabled = true;
  std::string reason; ///< e.g. "POCL_KERNEL_CACHE=0 (runtime cache disabled by the user)"
};

/// The resolved configuration. Immutable once built; passed down by const reference.
/// Built from the environment by Config::from_environment() - the only place jitcache reads
/// the environment - or from an explicit variable map (tests, embedding applications).
struct JITCACHE_EXPORT Config {
  /// User-tier directory, format version included (e.g. ~/.cache/jitcache/v1).
  /// Empty when no persistent cache is possible (no HOME, or a build with an empty default).
  std::filesystem::path cache_dir;
  /// JITCACHE_DISABLE=1: no persistent tiers for any backend.
  bool disable_all = false;
  /// JITCACHE_DISABLE=cuda,hip: no persistent tiers for these backends.
  std::set<std::string> disabled_backends;
  /// JITCACHE_DISABLE=0 given explicitly: keep persistent tiers even when a runtime's own
  /// cache control (CUDA_CACHE_DISABLE=1, POCL_KERNEL_CACHE=0) says not to.
  bool disable_explicitly_off = false;
  /// JITCACHE_READONLY: read every tier, write none.
  bool read_only = false;
  /// JITCACHE_MAX_SIZE in bytes; nullopt = unlimited.
  std::optional<std::uint64_t> max_size;
  /// JITCACHE_SYSTEM_PATH entries, in order (files, and folders whose `*.jcpkg` files count);
  /// when it is unset, the build's default folder (JITCACHE_DEFAULT_SYSTEM_PATH in CMake).
  std::vector<std::filesystem::path> system_path;
  /// Whether system_path is the build's default (then a folder that is absent is not warned
  /// about: nothing was installed there).
  bool system_path_default = false;
  /// JITCACHE_REMOTE: the remote tiers' URLs that parsed, comma-separated, in lookup order, e.g.
  /// "redis://host:6379"; empty = none. Each bad URL was left out with a warning.
  std::string remote;
  /// JITCACHE_REMOTE_KEY, or the content of JITCACHE_REMOTE_KEY_FILE: the HMAC-SHA256 key that
  /// signs the entries written to the remote tiers and checks those read. Empty: none (remote
  /// tiers are then read-only unless a URL says unsigned=1). A secret: never printed.
  std::string remote_key;
  /// Where remote_key came from ("JITCACHE_REMOTE_KEY" or "JITCACHE_REMOTE_KEY_FILE=path"), for
  /// `jitcache info`; empty when there is no key.
  std::string remote_key_source;
  /// JITCACHE_RECORD: the file every distinct request is appended to (core/record/request_log), for
  /// `jitcache warm`; empty = none. Absolute.
  std::filesystem::path record;
  /// JITCACHE_LOG.
  LogLevel log_level = LogLevel::warn;
  /// JITCACHE_OPENCL_STORE: when a PoCL program's binary is read and stored.
  StoreMode opencl_store = StoreMode::detach;
  /// JITCACHE_OPENCL_LAYER: whether the OpenCL loader layer (libjitcache-opencl-layer.so), when
  /// loaded, serves the programs it sees; false: it passes every call through.
  bool opencl_layer = true;
  /// JITCACHE_TUNE: the tuning database's mode.
  TuneMode tune = TuneMode::off;
  /// JITCACHE_NVRTC=0, JITCACHE_HIPRTC=0: the front-ends (k_front_ends) that pass every call to
  /// the real runtime untouched while loaded.
  std::set<std::string> front_ends_off;
  /// Byte bound of the per-process blob LRU (memory tier).
  std::uint64_t memory_bytes = 64ull << 20;
  /// JITCACHE_MAX_COMPILES: compiles at once on this host across the processes sharing the user
  /// tier; 0 = the number of cores.
  unsigned max_compiles = 0;

  /// Every recognised variable that was set, name -> raw value (jitcache's and the runtimes').
  std::map<std::string, std::string> variables;
  /// One line per variable that had a bad value ("JITCACHE_MAX_SIZE=banana: not a size; using
  /// unlimited"). Logged once when the config is built from the environment.
  std::vector<std::string> warnings;

  /// The variables set in the environment that `backend`'s compiler reads and that change the
  /// code it generates (name, value), in a fixed order. They are part of the key.
  std::vector<std::pair<std::string, std::string>>
  compile_environment(std::string_view backend) const;

  /// Whether `backend`'s persistent tiers are on, and why.
  PersistencePolicy persistence(std::string_view backend) const;

  /// Reads the environment, then the configuration file (config/config_file.hpp); logs warnings.
  static Config from_environment();

  /// Builds a config from `vars` as if they were the environment, reading no configuration file;
  /// warnings are returned, not logged. Never fails: bad values fall back to defaults, warned.
  static Config from_variables(const std::map<std::string, std::string>& vars);

  /// The names of all variables jitcache reads, jitcache's own and the runtimes'.
  static std::vector<std::string> known_variables();
};

/// Parses a size such as "10G", "512M", "1.5GiB", "4096" (bytes; K/M/G/T are powers of 1024).
/// Returns std::nullopt on anything else (negative, empty, garbage, overflow).
JITCACHE_EXPORT std::optional<std::uint64_t> parse_size(std::string_view text);

/// Formats bytes for people: "1.5 GiB", "312 KiB", "12 B".
JITCACHE_EXPORT std::string format_size(std::uint64_t bytes);

} // namespace jitcache
