// A tuning problem's line in the request record (core/tuning/tuning_problem_line.hpp), and
// read_problem() and choice_line() of jitcache/tuning.hpp, which a tuning runner uses.
#include "core/tuning/tuning_problem_line.hpp"

#include "core/support/json_line.hpp"

#include <nlohmann/json.hpp>

namespace jitcache::tuning {

std::string encode_problem_line(const Family& family, const Problem& problem, const Device& device,
                                const std::vector<Parameters>& candidates) {
  nlohmann::json identity = nlohmann::json::object();
  for (const auto& [name, value] : device.identity)
    identity[name] = value;
  const nlohmann::json line = {
      {"format", k_problem_line_version},
      {"kind", "tuning"},
      {"family", family.name},
      {"family_version", family.version},
      {"problem", problem},
      {"backend", device.backend},
      {"device", device.name},
      {"identity", identity},
      {"candidates", candidates},
  };
  return detail::json_line(line);
}

bool is_problem_line(std::string_view line) {
  const auto json = nlohmann::json::parse(line, nullptr, false);
  return json.is_object() && json.value("kind", nlohmann::json()) == "tuning";
}

Expected<RecordedProblem> read_problem(std::string_view line) {
  const auto json = nlohmann::json::parse(line, nullptr, false);
  if (json.is_discarded())
    return Error(ErrorCode::corrupt, "not a tuning problem's line: not JSON");
  detail::JsonFields fields(json);
  try {
    if (json.value("kind", nlohmann::json()) != "tuning")
      return Error(ErrorCode::corrupt, "not a tuning problem's line (its \"kind\" is not "
                                       "\"tuning\")");
    if (const int format = fields.get<int>("format"); format != k_problem_line_version)
      return Error(ErrorCode::corrupt, "tuning problem line format " + std::to_string(format) +
                                           " (this jitcache reads format " +
                                           std::to_string(k_problem_line_version) + ")");
    RecordedProblem out;
    out.family = fields.get<std::string>("family");
    out.family_version = fields.get<std::uint32_t>("family_version");
    out.problem = fields.get<Problem>("problem");
    out.backend = fields.get<std::string>("backend");
    out.device = fields.get<std::string>("device");
    out.candidates = fields.get<std::vector<Parameters>>("candidates");
    return out;
  } catch (const nlohmann::json::exception&) {
    return Error(ErrorCode::corrupt, "not a tuning problem's line: " + fields.refusal());
  }
}

std::string choice_line(const Choice& choice) {
  nlohmann::json line = {{"parameters", choice.parameters}, {"origin", to_string(choice.origin)}};
  if (choice.record) {
    line["method"] = to_string(choice.record->method);
    line["best_ms"] = choice.record->best_ms;
    line["default_ms"] = choice.record->default_ms;
    line["candidates"] = choice.record->candidates;
    line["skipped"] = choice.record->skipped;
  }
  return detail::json_line(line);
}

} // namespace jitcache::tuning
