#include "core/record/request_record.hpp"

#include "core/support/json_line.hpp"

#include <nlohmann/json.hpp>

namespace jitcache::detail {

std::string encode_request(const RequestRecord& record) {
  nlohmann::json headers = nlohmann::json::array();
  for (const RecordedHeader& header : record.headers)
    headers.push_back({{"name", header.name}, {"content", header.content}, {"path", header.path}});
  nlohmann::json line = {
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
  line["key_schema"] = record.key_schema;
  if (record.compile_ns)
    line["compile_ns"] = record.compile_ns;
  return json_line(line);
}

Expected<RequestRecord> decode_request(std::string_view line) {
  const auto json = nlohmann::json::parse(line, nullptr, false);
  if (json.is_discarded())
    return Error(ErrorCode::corrupt, "not a request record: not JSON");
  JsonFields fields(json);
  try {
    if (const int format = fields.get<int>("format"); format != k_request_record_version)
      return Error(ErrorCode::corrupt, "request record format " + std::to_string(format) +
                                           " (this jitcache reads format " +
                                           std::to_string(k_request_record_version) + ")");
    RequestRecord record;
    record.backend = fields.get<std::string>("backend");
    record.device = fields.get<std::string>("device");
    record.identity = fields.get<std::map<std::string, std::string>>("identity");
    record.toolchain = fields.get<std::map<std::string, std::string>>("toolchain");
    record.options = fields.get<std::vector<std::string>>("options");
    record.directory = fields.get<std::string>("directory");
    record.name = fields.get<std::string>("name");
    record.source = fields.get<std::string>("source");
    for (const auto& header : fields.at("headers"))
      record.headers.push_back({header.at("name").get<std::string>(),
                                header.at("content").get<std::string>(),
                                header.at("path").get<std::string>()});
    record.name_expressions = fields.get<std::vector<std::string>>("name_expressions");
    record.key = fields.get<std::string>("key");
    record.variables = fields.get<std::map<std::string, std::string>>("variables");
    record.key_schema = json.contains("key_schema") ? fields.get<int>("key_schema") : 1;
    if (json.contains("compile_ns"))
      record.compile_ns = fields.get<std::uint64_t>("compile_ns");
    return record;
  } catch (const nlohmann::json::exception&) {
    return Error(ErrorCode::corrupt, "not a request record: " + fields.refusal());
  }
}

} // namespace jitcache::detail
