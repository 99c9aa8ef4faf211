#pragma once

#include "core/config/config_table.hpp"

#include <jitcache/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::detail {

// The configuration file, jitcache.conf: ccache-like `key = value` lines whose keys are the
// environment table's settings in lower case without the prefix (`max_size = 5G` is
// JITCACHE_MAX_SIZE=5G). Its values go through the same rows, parsers and complaints as the
// environment's; a variable set in the environment, even to an empty value, wins over the file,
// and the file over the built-in default.

/// The most a configuration file may hold: one that is larger is ignored, with a warning.
inline constexpr std::uint64_t k_config_file_max_bytes = 64 * 1024;

/// Where a process's configuration file is.
struct ConfigFileLocation {
  std::filesystem::path path; ///< absolute; empty: none is used
  std::string why_none;       ///< when path is empty: why, in words
};

/// Where the configuration file is for a process whose environment holds `environment` (the
/// table's variables that are set): JITCACHE_CONFIG_FILE when set (set but empty: none), else
/// `$XDG_CONFIG_HOME/jitcache/jitcache.conf` (an absolute XDG_CONFIG_HOME only, as the XDG
/// specification says), else `$HOME/.config/jitcache/jitcache.conf`, else none. Pure.
ConfigFileLocation config_file_location(const std::map<std::string, std::string>& environment);

/// A setting a configuration file gives.
struct FileSetting {
  std::string value; ///< trimmed; may be empty (then, as in the environment, the default)
  unsigned line = 0; ///< 1-based
};

/// What a configuration file says, once read and parsed.
struct ConfigFileContents {
  std::filesystem::path path; ///< the file; empty when none is used
  /// Each setting the file may give (see file_refusal), by variable name (JITCACHE_MAX_SIZE), as
  /// its last line for that key says. Values are not checked here: Config's construction runs
  /// each through its row's parser and names the file and line in a complaint.
  std::map<std::string, FileSetting> settings;
  /// The file's own problems, each naming the file (and line): it cannot be read, is not a
  /// regular file, is too large or not private to its owner (then no setting of it is used);
  /// a damaged line (bytes that are not text, no `=`), an unknown key, a key the file may not
  /// give, a relative path (each such line is ignored; the other lines still apply). At most
  /// k_config_file_max_warnings, the last one counting those left out.
  std::vector<std::string> warnings;
  /// The line that asked for a remote key the file cannot give (`remote_key = ...`, or a
  /// `remote_key_file` whose path is relative), 0 when none: a key was asked for and cannot be
  /// used, so the remote tiers are off (unless the environment gives a key).
  unsigned refused_key_line = 0;
};

/// The most warnings one configuration file gives (damaged bytes could give one per line).
inline constexpr std::size_t k_config_file_max_warnings = 8;

/// Parses `text`, the content of the configuration file `path` (named in warnings): lines of
/// `key = value` (whitespace around both trimmed), blank lines and `#` comment lines. A line
/// with a NUL, a control character other than a tab (a CR before the newline is allowed) or
/// bytes that are not UTF-8, or without `=`, is damaged and ignored whole; the other lines
/// apply. Never fails, never throws but std::bad_alloc.
ConfigFileContents parse_config_file(std::string_view text, const std::filesystem::path& path);

/// Reads and parses the configuration file at `path` (empty: none). An absent file is no
/// settings and no warning. Never blocks (a FIFO, a device or a directory is refused, with a
/// warning, without waiting for a writer) and reads at most k_config_file_max_bytes. A file
/// that belongs to another user than this one or root, or that its group or others may write
/// (as ssh refuses its config), is ignored with a warning: it could point the cache at
/// binaries someone else wrote.
ConfigFileContents read_config_file(const std::filesystem::path& path);

/// read_config_file(path), read once per process (again only when another path is asked for):
/// a setting does not change under a running process, and every Config of it agrees.
ConfigFileContents read_config_file_once(const std::filesystem::path& path);

/// The Config of a process whose environment holds `environment` and whose configuration file
/// says `file`: each setting of the file that the environment does not set (even to an empty
/// value) is taken as if it were set there (it is in Config::variables), its complaints naming
/// the file and line; the file's own warnings come first. A refused remote key of the file
/// (refused_key_line) turns the remote tiers off unless the environment asks for a key itself.
/// What Config::from_environment() builds, without logging.
Config config_from(const std::map<std::string, std::string>& environment,
                   const ConfigFileContents& file);

/// This process's environment: each variable of the table that is set, name -> value (the one
/// getenv of the project, with Config::from_environment()).
std::map<std::string, std::string> environment_variables();

/// The key of setting `variable` in the file: its name without `JITCACHE_`, in lower case
/// (`JITCACHE_MAX_SIZE` -> `max_size`).
std::string file_key(std::string_view variable);

/// The setting row (EnvRole::setting) that `key` names: a file key (`max_size`) or the
/// variable's name (`JITCACHE_MAX_SIZE`); nullptr when none does. Static storage.
const EnvVariable* find_setting(std::string_view key);

/// Why setting `v` may not be given by a configuration file, or nullptr when it may.
const char* file_refusal(const EnvVariable& v);

/// What is wrong with `value` for setting `v` in a configuration file (empty: nothing): the
/// complaints of its row's parser, the environment's, each without what it falls back to; a
/// value that is empty, not one line of text, or a relative path where a path is taken. For
/// `jitcache config KEY VALUE`, before anything is written. Reads what the parser reads (a
/// key file: see JITCACHE_REMOTE_KEY_FILE).
std::vector<std::string> check_file_value(const EnvVariable& v, const std::string& value);

/// Sets (`value`) or removes (std::nullopt) setting `v` in the configuration file `path`,
/// keeping every other line as it is: the first line of its key is replaced, later ones
/// dropped; a new key is appended. A symbolic link is written through (its target replaced).
/// Atomic: a temporary file in the same folder (`.<file>.tmp`; one a killed writer left is
/// replaced), written, fsynced and renamed over the old one
/// (its mode kept, less group and others' write; 0600 for a new file), then the folder fsynced;
/// whatever fails leaves the old file as it was and no temporary file. Concurrent writers are
/// serialised by an exclusive flock on `<file>.lock` next to it, so none loses another's
/// change. The folder is created (mode 0700) when missing. `value` must have passed
/// check_file_value. Errors: io_error, one line naming the file (or folder) and the system's
/// reason (read-only folder, disk full, a file that is not a regular one or is too large).
Expected<void> write_config_setting(const std::filesystem::path& path, const EnvVariable& v,
                                    const std::optional<std::string>& value);

} // namespace jitcache::detail
