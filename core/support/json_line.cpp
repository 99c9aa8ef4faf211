#include "core/support/json_line.hpp"

namespace jitcache::detail {

std::string json_line(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace jitcache::detail
