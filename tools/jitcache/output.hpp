#pragma once

#include <jitcache/expected.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace jitcache::cli {

/// Prints results either as JSON (one object per line) or as text for people.
class Output {
public:
  explicit Output(bool json) : m_json(json) {}
  bool json() const { return m_json; }
  /// Prints `object` as one JSON line, or `text` (which may span lines) in text mode.
  void emit(const nlohmann::json& object, const std::string& text) const;

private:
  bool m_json;
};

/// Prints "jitcache: error: <message>" (one line) to stderr, plus `error.log` when present,
/// and returns the exit status to use (1).
int fail(const Error& error);

/// Sets the usage text usage_error() prints: the help of the command being run (main, once the
/// command line is parsed).
void set_usage(std::string usage);

/// For a command line that asks for something the command cannot mean (a value out of its
/// range, a missing operand): prints "jitcache: error: <message>" (one line) and then the
/// command's usage (set_usage) to stderr, and returns the exit status to use (2).
int usage_error(const std::string& message);

/// For an error about a value of the command line (a backend's name, a size): usage_error() when
/// its code is invalid_argument, else fail().
int fail_option(const Error& error);

/// "name=value,name=value" of `map` in its order (a tuning problem, its parameters), or `if_empty`
/// when it has none.
std::string pairs_text(const std::map<std::string, std::string>& map, const char* if_empty = "");

/// Reads a source file given on the command line: a regular file of at most `max_size`
/// (`--max-source-size`, e.g. "64M"; "0": no limit). Errors: invalid_argument (`max_size` is not a
/// size), io_error naming the file and the reason (see detail::read_regular_file).
Expected<std::string> read_source(const std::string& path, const std::string& max_size);

} // namespace jitcache::cli
