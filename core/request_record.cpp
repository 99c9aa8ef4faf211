#include "core/request_record.hpp"

#include <nlohmann/json.hpp>

namespace jitcache::detail {

std::string encode_request(const RequestRecord& record) {
  const nlohmann::json line = {
      {"backend", record.backend},     {"device", record.device}, {"options", record.options},
      {"directory", record.directory}, {"source", record.source}, {"key", record.key},
      {"variables", record.variables},
  };
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Expected<RequestRecord> decode_request(std::string_view line) {
  try {
    const auto json = nlohmann::json::parse(line);
    RequestRecord record;
    record.backend = json.at("backend").get<std::string>();
    record.device = json.at("device").get<std::string>();
    record.options = json.at("options").get<std::string>();
    record.directory = json.at("directory").get<std::string>();
    record.source = json.at("source").get<std::string>();
    record.key = json.at("key").get<std::string>();
    record.variables = json.at("variables").get<std::map<std::string, std::string>>();
    return record;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::corrupt, std::string("not a request record: ") + e.what());
  }
}

} // namespace jitcache::detail
