#include "core/key/key_fields.hpp"
#include "tools/jitcache/backend_table.hpp"
#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include <map>
#include <sstream>

namespace jitcache::cli {

using detail::BuildRequest;
using detail::decode_key_fields;
using detail::encode_key_fields;
using detail::LmdbStore;

namespace {

using FieldId = std::pair<KeySection, std::string>;

// Fields as stored: long values become "sha256:<hex>" (decode of the stored encoding).
std::vector<KeyField> as_stored(const std::vector<KeyField>& fields) {
  return decode_key_fields(encode_key_fields(fields)).value_or(std::vector<KeyField>{});
}

std::map<FieldId, std::string> by_id(const std::vector<KeyField>& fields) {
  std::map<FieldId, std::string> out;
  for (const KeyField& f : fields)
    out[{f.section, f.name}] = f.value;
  return out;
}

struct Difference {
  Digest key;
  std::vector<std::tuple<KeySection, std::string, std::string, std::string>> fields; // now, stored
};

// Entries of the user tier stored for the same source, and the fields in which they differ.
// Errors: the store's, when its entries cannot be listed.
Expected<std::vector<Difference>> compare_with_stored(LmdbStore& store, const Key& key,
                                                      const std::vector<KeyField>& now,
                                                      bool& exact) {
  const auto mine = by_id(now);
  std::string source;
  for (const KeyField& f : now)
    if (f.section == KeySection::source)
      source = f.value;
  std::vector<Digest> keys;
  auto listed = store.for_each([&](const Store::Item& item) {
    if (item.backend == key.backend)
      keys.push_back(item.key);
  });
  if (!listed)
    return listed.error();
  std::vector<Difference> out;
  exact = false;
  for (const Digest& other : keys) {
    auto entry = store.get(other);
    if (!entry || !*entry)
      continue;
    auto fields = decode_key_fields((*entry)->key_fields);
    if (!fields)
      continue;
    const auto theirs = by_id(*fields);
    auto it = std::find_if(fields->begin(), fields->end(),
                           [](const KeyField& f) { return f.section == KeySection::source; });
    if (it == fields->end() || it->value != source)
      continue;
    if (other == key.digest) {
      exact = true;
      continue;
    }
    Difference d{other, {}};
    std::map<FieldId, std::pair<std::string, std::string>> all;
    for (const auto& [id, value] : mine)
      all[id].first = value;
    for (const auto& [id, value] : theirs)
      all[id].second = value;
    for (const auto& [id, values] : all)
      if (values.first != values.second || !mine.count(id) || !theirs.count(id))
        d.fields.emplace_back(id.first, id.second, mine.count(id) ? values.first : "(absent)",
                              theirs.count(id) ? values.second : "(absent)");
    out.push_back(std::move(d));
  }
  return out;
}

// One line per value in text mode: newlines escaped, long values cut.
std::string one_line(const std::string& value) {
  std::string out;
  for (char c : value)
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out.size() > 100 ? out.substr(0, 97) + "..." : out;
}

} // namespace

int run_explain(const Config& config, const BuildOptions& options, const Output& out) {
  auto backend = find_backend(options.backend);
  if (!backend)
    return fail_option(backend.error());
  auto store = open_user_tier(config, false);
  if (!store)
    return fail(store.error());
  for (const std::string& file : options.files) {
    auto source = read_source(file, options.max_source_size);
    if (!source)
      return fail_option(source.error());
    BuildRequest request{file, *source, options.options, options.device, options.arch};
    auto key = (*backend)->key(config, request);
    if (!key)
      return fail(key.error());
    const std::vector<KeyField> made = all_fields(*key);
    const std::vector<KeyField> shown = as_stored(made);
    nlohmann::json fields = nlohmann::json::array();
    std::ostringstream text;
    text << file << ": key " << key->digest.hex() << "\n";
    for (std::size_t i = 0; i < shown.size(); ++i) {
      const KeyField& f = shown[i];
      const std::string& detail = made[i].detail;
      fields.push_back({{"section", to_string(f.section)},
                        {"name", f.name},
                        {"value", f.value},
                        {"detail", detail}});
      text << "  " << to_string(f.section) << "  " << f.name << " = " << one_line(f.value)
           << (detail.empty() ? "" : "  (" + detail + ")") << "\n";
    }
    bool exact = false;
    std::vector<Difference> diffs;
    if (*store) {
      auto compared = compare_with_stored(**store, *key, shown, exact);
      if (!compared)
        return fail(compared.error());
      diffs = std::move(*compared);
    }
    nlohmann::json differences = nlohmann::json::array();
    text << (exact ? "  stored: yes (a lookup hits)" : "  stored: no (a lookup misses)");
    if (!exact && diffs.empty())
      text << "; no stored entry has the same source";
    for (const Difference& d : diffs) {
      nlohmann::json changed = nlohmann::json::array();
      text << "\n  differs from stored entry " << d.key.hex().substr(0, 16) << " in:";
      for (const auto& [section, name, now, stored] : d.fields) {
        changed.push_back(
            {{"section", to_string(section)}, {"name", name}, {"now", now}, {"stored", stored}});
        text << "\n    " << to_string(section) << " " << name << ": " << one_line(stored) << " -> "
             << one_line(now);
      }
      differences.push_back({{"key", d.key.hex()}, {"fields", changed}});
    }
    out.emit({{"file", file},
              {"backend", options.backend},
              {"key", key->digest.hex()},
              {"stored", exact},
              {"fields", fields},
              {"differences", differences}},
             text.str());
  }
  return 0;
}

} // namespace jitcache::cli
