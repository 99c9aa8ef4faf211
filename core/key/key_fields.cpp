#include "core/key/key_fields.hpp"

#include "core/support/byte_io.hpp"
#include "core/support/fork_safe_mutex.hpp"

#include <xxhash.h>

#include <mutex>
#include <unordered_map>

namespace jitcache::detail {

namespace {

// The stored form of long values, remembered per process: a process's keys repeat the same
// headers (each kernel of a CuPy program reads 3 MB of toolkit headers), and hashing them again
// for the stored form was a third of building such a key. A value is found by its XXH3-128 and
// used only when its bytes equal those the digest was computed from (kept here, bounded).
class StoredDigests {
public:
  static StoredDigests& instance() {
    static StoredDigests* const digests = new StoredDigests; // never destroyed: used during exit
    return *digests;
  }

  std::string of(std::string_view value) {
    if (value.size() < k_remembered_from)
      return "sha256:" + Digest::of(value).hex();
    const XXH128_hash_t hash = XXH3_128bits(value.data(), value.size());
    const Id id{hash.low64, hash.high64};
    {
      std::lock_guard<ForkSafeMutex> lock(m_mutex);
      if (auto it = m_known.find(id); it != m_known.end() && it->second.value == value)
        return it->second.stored;
    }
    std::string stored = "sha256:" + Digest::of(value).hex();
    std::lock_guard<ForkSafeMutex> lock(m_mutex);
    if (m_bytes + value.size() > k_remembered_bytes) {
      m_known.clear();
      m_bytes = 0;
    }
    if (m_known.try_emplace(id, Known{std::string(value), stored}).second)
      m_bytes += value.size();
    return stored;
  }

private:
  // Below this size, hashing costs about as much as finding the digest again.
  static constexpr std::size_t k_remembered_from = 4096;
  static constexpr std::size_t k_remembered_bytes = std::size_t(64) << 20;
  struct Id {
    std::uint64_t low, high;
    bool operator==(const Id& o) const { return low == o.low && high == o.high; }
  };
  struct IdHash {
    std::size_t operator()(const Id& id) const { return static_cast<std::size_t>(id.low); }
  };
  struct Known {
    std::string value;
    std::string stored;
  };
  ForkSafeMutex m_mutex;
  std::unordered_map<Id, Known, IdHash> m_known;
  std::size_t m_bytes = 0;
};

[[maybe_unused]] const bool g_key_fields_made_before_main =
    (StoredDigests::instance(), true); // see ForkSafeMutex

} // namespace

std::string stored_value(std::string_view value) {
  std::string buffer;
  return std::string(stored_value(value, buffer));
}

std::string_view stored_value(std::string_view value, std::string& buffer) {
  if (value.size() <= k_inline_value_limit)
    return value;
  buffer = StoredDigests::instance().of(value);
  return buffer;
}

void append_stored_field(std::string& out, const KeyField& field, std::string_view stored) {
  out += static_cast<char>(field.section);
  detail::append_sized<std::uint32_t>(out, field.name);
  detail::append_sized<std::uint32_t>(out, stored);
}

std::string encode_key_fields(const std::vector<KeyField>& fields) {
  std::string out;
  for (const KeyField& f : fields)
    append_stored_field(out, f, stored_value(f.value));
  return out;
}

std::optional<std::vector<KeyField>> decode_key_fields(std::string_view in) {
  std::vector<KeyField> fields;
  while (!in.empty()) {
    KeyField f;
    f.section = static_cast<KeySection>(in[0]);
    in.remove_prefix(1);
    if (!detail::take_sized<std::uint32_t>(in, f.name) ||
        !detail::take_sized<std::uint32_t>(in, f.value))
      return std::nullopt;
    fields.push_back(std::move(f));
  }
  return fields;
}

} // namespace jitcache::detail
