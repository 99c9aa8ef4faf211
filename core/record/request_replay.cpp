#include "core/record/request_replay.hpp"

#include "core/key/includes.hpp"
#include "core/key/key_fields.hpp"

#include <fstream>
#include <map>

namespace jitcache::detail {

namespace fs = std::filesystem;

bool included_header(const RecordedHeader& header) {
  return header.name.rfind("#include ", 0) != 0 && header.name.rfind("-D", 0) != 0;
}

namespace {

// "name: recorded -> now" for each field of `section` in `key` that differs from `recorded`.
void compare_fields(const std::map<std::string, std::string>& recorded, const Key& key,
                    KeySection section, std::string& out) {
  std::map<std::string, std::string> now;
  for (const KeyField& field : key.fields)
    if (field.section == section)
      now[field.name] = field.value;
  const auto add = [&](const std::string& text) { out += (out.empty() ? "" : "; ") + text; };
  for (const auto& [name, value] : recorded) {
    auto it = now.find(name);
    if (it == now.end())
      add(name + " " + value + " is gone");
    else if (it->second != value)
      add(name + " " + value + " is now " + it->second);
  }
  for (const auto& [name, value] : now)
    if (!recorded.count(name))
      add(name + " " + value + " is new");
}

} // namespace

Expected<void> check_replayed_key(const RequestRecord& record, const Key& key) {
  if (key.digest.hex() == record.key)
    return {};
  if (record.key_schema != k_key_schema_version)
    return Error(ErrorCode::invalid_argument,
                 "the request was recorded by a jitcache whose keys have schema " +
                     std::to_string(record.key_schema) + "; this one makes schema " +
                     std::to_string(k_key_schema_version) +
                     " keys, so no recorded key can be made again: record the application again");
  std::string why;
  compare_fields(record.identity, key, KeySection::device, why);
  compare_fields(record.toolchain, key, KeySection::toolchain, why);
  std::map<std::string, std::string> recorded, now;
  for (const RecordedHeader& header : record.headers)
    recorded.emplace(header.name, header.content);
  for (const KeyField& field : all_fields(key))
    if (field.section == KeySection::header)
      now.emplace(field.name, field.value);
  const auto add = [&](const std::string& text) { why += (why.empty() ? "" : "; ") + text; };
  for (const auto& [name, content] : now) {
    auto it = recorded.find(name);
    if (it == recorded.end())
      add("header " + name + " is not in the record");
    else if (stored_value(it->second) != stored_value(content)) // a key may hold either form
      add("header " + name + " has other content than recorded");
  }
  for (const auto& [name, content] : recorded)
    if (!now.count(name))
      add("header " + name + " of the record is not found");
  // A header the source includes that the record lacks (a line cut or edited by hand) and this
  // machine lacks too: the key has no field for it, so only the source tells.
  std::map<std::string, std::string> given;
  for (const RecordedHeader& header : record.headers)
    if (included_header(header))
      given.emplace(header.name, header.content);
  for (const std::string& name : scan_includes(record.source, {}, given).unresolved)
    if (!now.count(name))
      add("the source includes \"" + name + "\", which neither the record nor this machine has");
  if (why.empty())
    why = "its source, options, name expressions or headers are not those the key was made "
          "from, or the environment differs";
  return Error(ErrorCode::invalid_argument,
               "the request's key is not the recorded one (" + why + ")");
}

Expected<void> write_headers(const RequestRecord& record, const fs::path& dir) {
  for (const RecordedHeader& header : record.headers) {
    const fs::path name = fs::path(header.name).lexically_normal();
    if (!included_header(header) || name.is_absolute() || name.empty() || *name.begin() == "..")
      continue;
    const fs::path file = dir / name;
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << header.content;
    if (!out.flush())
      return Error(ErrorCode::io_error, "cannot write " + file.string());
  }
  return {};
}

std::string options_including(const std::string& options, const fs::path& dir) {
  const std::vector<std::string> tokens = split_options(options);
  std::string out;
  const auto emit = [&](const std::string& token) {
    const bool quote = token.find_first_of(" \t\n'\"") != std::string::npos;
    out += (out.empty() ? "" : " ") + (quote ? "\"" + token + "\"" : token);
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == "-I" && i + 1 < tokens.size()) {
      emit("-I");
      emit(dir.string());
      ++i;
    } else if (tokens[i].size() > 2 && tokens[i].compare(0, 2, "-I") == 0) {
      emit("-I" + dir.string());
    } else {
      emit(tokens[i]);
    }
  }
  return out;
}

} // namespace jitcache::detail
