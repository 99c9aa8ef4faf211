#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace jitcache::detail {

/// `value` as one line of JSON text (no newline added; compact). Strings that are not UTF-8
/// (a compiler's message, a path, a source's bytes) have their bad bytes replaced by U+FFFD
/// instead of throwing, so whatever jitcache writes as JSON is always written.
std::string json_line(const nlohmann::json& value);

/// Reads the fields of a parsed JSON line and remembers which one it read last, so that a line
/// refused says in words what is wrong with it instead of the JSON library's exception text
/// (which names no field and reaches people through the command line).
class JsonFields {
public:
  /// `json` must outlive this object.
  explicit JsonFields(const nlohmann::json& json) : m_json(json) {}
  /// The field `name`. Throws nlohmann::json::exception when it is missing (or `json` is not an
  /// object); refusal() then names it.
  const nlohmann::json& at(const char* name) {
    m_field = name;
    return m_json.at(name);
  }
  /// The field `name` as a T. Throws as at(), or when it is of another type.
  template <typename T> T get(const char* name) { return at(name).template get<T>(); }
  /// Why the line was refused, after one of the calls above threw: "not a JSON object", or
  /// "field \"NAME\" is missing or of the wrong type". Never fails.
  std::string refusal() const;

private:
  const nlohmann::json& m_json;
  const char* m_field = nullptr;
};

} // namespace jitcache::detail
