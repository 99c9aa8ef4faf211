#include "core/tuning/tuning_record.hpp"

#include "core/support/byte_io.hpp"
#include "core/tiers/entry_codec.hpp"

#include <cmath>

namespace jitcache::tuning {

using detail::encode_entry;
using detail::view_entry;

namespace {

constexpr std::string_view k_schema = "jitcache tuning record key 1";

using detail::append_le;
using detail::append_sized;
using detail::take_le;
using detail::take_sized;

void append_pairs(std::string& out, const std::map<std::string, std::string>& pairs) {
  append_le<std::uint32_t>(out, static_cast<std::uint32_t>(pairs.size()));
  for (const auto& [name, value] : pairs) {
    append_sized<std::uint32_t>(out, name);
    append_sized<std::uint32_t>(out, value);
  }
}

template <typename Pairs> bool take_pairs(std::string_view& in, Pairs& pairs) {
  std::uint32_t count = 0;
  if (!take_le(in, count))
    return false;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::string name, value;
    if (!take_sized<std::uint32_t>(in, name) || !take_sized<std::uint32_t>(in, value))
      return false;
    pairs.insert(pairs.end(), {std::move(name), std::move(value)});
  }
  return true;
}

// Rounded, not truncated: a time read back from whole nanoseconds (to_ms) is often a hair under
// them as a double, and must store as the same nanoseconds again.
std::uint64_t to_ns(double ms) {
  return ms > 0 ? static_cast<std::uint64_t>(std::llround(ms * 1e6)) : 0;
}

double to_ms(std::uint64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

Error corrupt(const std::string& why) {
  return Error(ErrorCode::corrupt, "stored tuning record " + why);
}

} // namespace

std::string identity_fields(const Family& family, const Problem& problem, const Device& device) {
  std::string out;
  append_sized<std::uint32_t>(out, k_schema);
  append_sized<std::uint32_t>(out, family.name);
  append_le<std::uint32_t>(out, family.version);
  append_pairs(out, problem);
  return out + device_fields(device);
}

std::string device_fields(const Device& device) {
  std::string out;
  append_sized<std::uint32_t>(out, device.backend);
  append_le<std::uint32_t>(out, static_cast<std::uint32_t>(device.identity.size()));
  for (const auto& [name, value] : device.identity) {
    append_sized<std::uint32_t>(out, name);
    append_sized<std::uint32_t>(out, value);
  }
  return out;
}

detail::PackageTarget package_target(const Record& record) {
  return {k_tuning_backend, record.device.backend + "-" + record.device.name,
          device_fields(record.device)};
}

Digest record_key(const Family& family, const Problem& problem, const Device& device) {
  return Digest::of(identity_fields(family, problem, device));
}

Digest key_of(const Record& record) {
  Family family;
  family.name = record.family;
  family.version = record.family_version;
  return record_key(family, record.problem, record.device);
}

Record as_stored(Record record) {
  record.best_ms = to_ms(to_ns(record.best_ms));
  record.default_ms = to_ms(to_ns(record.default_ms));
  return record;
}

std::string encode_record(const Record& record) {
  Family family;
  family.name = record.family;
  family.version = record.family_version;
  std::string body;
  append_le<std::uint32_t>(body, k_record_version);
  append_sized<std::uint32_t>(body, record.device.name);
  append_pairs(body, record.parameters);
  append_le<std::uint64_t>(body, to_ns(record.best_ms));
  append_le<std::uint64_t>(body, to_ns(record.default_ms));
  append_le<std::uint8_t>(body, static_cast<std::uint8_t>(record.method));
  append_le<std::int64_t>(body, record.when);
  append_sized<std::uint32_t>(body, record.jitcache_version);
  append_le<std::uint32_t>(body, record.candidates);
  append_le<std::uint32_t>(body, record.skipped);
  Entry entry(k_tuning_backend, std::move(body));
  entry.key_fields = identity_fields(family, record.problem, record.device);
  return encode_entry(Digest::of(entry.key_fields), entry);
}

Expected<Record> decode_record(const Digest& key, std::string_view bytes,
                               std::string_view fields_expected) {
  auto view = view_entry(key, bytes);
  if (!view)
    return Error(ErrorCode::corrupt, "tuning record: " + view.error().message);
  return decode_record(key, *view, fields_expected);
}

Expected<Record> decode_record(const Digest& key, const EntryView& entry,
                               std::string_view fields_expected) {
  if (entry.backend != k_tuning_backend)
    return corrupt("is an entry of backend '" + std::string(entry.backend) + "'");
  if (fields_expected.empty() ? Digest::of(entry.key_fields) != key
                              : entry.key_fields != fields_expected)
    return corrupt("has key fields of another key");
  Record r;
  std::string_view fields = entry.key_fields, body = entry.payload;
  std::string schema;
  if (!take_sized<std::uint32_t>(fields, schema) || schema != k_schema ||
      !take_sized<std::uint32_t>(fields, r.family) || !take_le(fields, r.family_version) ||
      !take_pairs(fields, r.problem) || !take_sized<std::uint32_t>(fields, r.device.backend) ||
      !take_pairs(fields, r.device.identity) || !fields.empty())
    return corrupt("has malformed key fields");
  std::uint32_t version = 0;
  if (!take_le(body, version) || version != k_record_version)
    return corrupt("has record version " + std::to_string(version));
  std::uint64_t best_ns = 0, default_ns = 0;
  std::uint8_t method = 0;
  if (!take_sized<std::uint32_t>(body, r.device.name) || !take_pairs(body, r.parameters) ||
      !take_le(body, best_ns) || !take_le(body, default_ns) || !take_le(body, method) ||
      method > static_cast<std::uint8_t>(Method::system) || !take_le(body, r.when) ||
      !take_sized<std::uint32_t>(body, r.jitcache_version) || !take_le(body, r.candidates) ||
      !take_le(body, r.skipped) || !body.empty())
    return corrupt("has a malformed body");
  r.best_ms = to_ms(best_ns);
  r.default_ms = to_ms(default_ns);
  r.method = static_cast<Method>(method);
  return r;
}

} // namespace jitcache::tuning
