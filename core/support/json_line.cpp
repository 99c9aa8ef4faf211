#include "core/support/json_line.hpp"

namespace jitcache::detail {

std::string json_line(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string JsonFields::refusal() const {
  if (!m_json.is_object())
    return "not a JSON object";
  if (!m_field)
    return "not in the expected form";
  return std::string("field \"") + m_field + "\" is missing or of the wrong type";
}

} // namespace jitcache::detail
