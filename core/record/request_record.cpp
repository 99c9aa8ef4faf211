#include "core/record/request_record.hpp"

#include "core/support/json_line.hpp"

#include <nlohmann/json.hpp>

namespace jitcache::detail {

std::string encode_request(const RequestRecord& record) {
  nlohmann::json headers = nlohmann::json::array();
  for (const RecordedHeader& header : record.headers)
    headers.push_back({{"name", header.name}, {"content", header.content}, {"path", header.path}});
  const nlohmann::json line = {
      {"format", k_request_record_version},
      {"backend", record.backend},
      {"device", record.device},
      {"identity", record.identity},
      {"toolchain", record.toolchain},
      {"options", record.options},
      {"directory", record.directory},
      {"name", record.name},
      {"source", record.source},
      {"headers", headers},
      {"name_expressions", record.name_expressions},
      {"key", record.key},
      {"variables", record.variables},
  };
  return json_line(line);
}

Expected<RequestRecord> decode_request(std::string_view line) {
  try {
    const auto json = nlohmann::json::parse(line);
    if (const int format = json.at("format").get<int>(); format != k_request_record_version)
      return Error(ErrorCode::corrupt, "request record format " + std::to_string(format) +
                                           " (this jitcache reads format " +
                                           std::to_string(k_request_record_version) + ")");
    RequestRecord record;
    record.backend = json.at("backend").get<std::string>();
    record.device = json.at("device").get<std::string>();
    record.identity = json.at("identity").get<std::map<std::string, std::string>>();
    record.toolchain = json.at("toolchain").get<std::map<std::string, std::string>>();
    record.options = json.at("options").get<std::vector<std::string>>();
    record.directory = json.at("directory").get<std::string>();
    record.name = json.at("name").get<std::string>();
    record.source = json.at("source").get<std::string>();
    for (const auto& header : json.at("headers"))
      record.headers.push_back({header.at("name").get<std::string>(),
                                header.at("content").get<std::string>(),
                                header.at("path").get<std::string>()});
    record.name_expressions = json.at("name_expressions").get<std::vector<std::string>>();
    record.key = json.at("key").get<std::string>();
    record.variables = json.at("variables").get<std::map<std::string, std::string>>();
    return record;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::corrupt, std::string("not a request record: ") + e.what());
  }
}

} // namespace jitcache::detail
