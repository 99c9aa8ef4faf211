#pragma once

#include <jitcache/digest.hpp>
#include <jitcache/export.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache {

/// Version of the key layout. Bumping it makes every earlier entry a miss.
inline constexpr int k_key_schema_version = 3;

/// The sections of a key, hashed in this order whatever order they were added in
/// (DESIGN.md "The key").
enum class KeySection : std::uint8_t {
  schema = 0,
  backend = 1,
  device = 2,
  toolchain = 3,
  options = 4,
  source = 5,
  header = 6,
};

/// Returns "schema", "backend", "device", ... Never fails.
JITCACHE_EXPORT const char* to_string(KeySection section) noexcept;

/// One named field of a key, kept for `jitcache explain`.
struct KeyField {
  KeySection section;
  std::string name;   ///< e.g. "device_name", "nvrtc_version", a header's resolved path
  std::string value;  ///< as given (hashed as its stored form: see KeyBuilder)
  std::string detail; ///< not hashed: shown by `jitcache explain` (e.g. a header's resolved path)
};

/// Header fields made once and shared by many keys: the headers one include scan found, which
/// every kernel of a process with the same includes repeats (a thousand in a CuPy kernel's key).
/// A key hashes a set as one field, the set's digest (KeyBuilder::headers, schema 3), so a set is
/// hashed and encoded once however many keys take it. Immutable; safe to share between threads.
class JITCACHE_EXPORT HeaderSet {
public:
  /// The set of `fields`, in their order; each is taken as of KeySection::header. A value is
  /// hashed in its stored form (see KeyBuilder), so a set of contents and the set of their stored
  /// forms have the same digest.
  explicit HeaderSet(std::vector<KeyField> fields);

  /// The fields, as given (section header).
  const std::vector<KeyField>& fields() const noexcept { return m_fields; }
  /// SHA-256 over the fields, each as KeyBuilder hashes a field: section byte, u64le name length,
  /// name, u64le stored value length, stored value.
  const Digest& digest() const noexcept { return m_digest; }
  /// The fields in the form Key::stored_fields holds them.
  const std::string& stored() const noexcept { return m_stored; }

private:
  std::vector<KeyField> m_fields;
  Digest m_digest;
  std::string m_stored;
};

/// A finished key: the digest plus the fields it was made of.
struct Key {
  Digest digest;
  std::string backend;
  std::vector<KeyField> fields; ///< in hashing order, except the header sets' fields
  /// The header sets added (KeyBuilder::headers), hashed after `fields` in this order.
  std::vector<std::shared_ptr<const HeaderSet>> header_sets;
  /// Every field in its stored form: `fields`, then each header set's; computed once by finish().
  std::string stored_fields;
};

/// Every field of `key` in hashing order: Key::fields, then each header set's fields (a copy).
/// What `jitcache explain` shows and a request record keeps. Never fails.
JITCACHE_EXPORT std::vector<KeyField> all_fields(const Key& key);

/// Builds a Key: SHA-256 over tagged, length-delimited fields, so that no two different
/// field lists hash alike ("-I -O2" vs "-I-O2", a byte moved across a field boundary).
/// Each field contributes: section byte, u64le name length, name, u64le value length, value,
/// where a value over 128 bytes (a source, a header's content) is hashed as "sha256:<hex>" of
/// it, the form Key::stored_fields holds. Fields are hashed in section order, and within a
/// section in the order added; then each header set as one field of section byte 7 (no field's
/// section) named "header set", whose value is "sha256:<hex>" of the set's digest (schema 3).
/// Not thread-safe; cheap to construct.
class JITCACHE_EXPORT KeyBuilder {
public:
  /// Starts a key for `backend` ("opencl", "cuda", "hip"); adds the schema version and
  /// the backend name.
  explicit KeyBuilder(std::string_view backend);

  /// Adds a device identity field (e.g. "device_name").
  KeyBuilder& device(std::string_view name, std::string_view value);
  /// Adds a toolchain identity field (e.g. "nvrtc_version").
  KeyBuilder& toolchain(std::string_view name, std::string_view value);
  /// Adds the build options, exactly as given (no reordering, no trimming).
  KeyBuilder& options(std::string_view options);
  /// Adds the kernel source (`name` is informative: a file name or program name).
  KeyBuilder& source(std::string_view source, std::string_view name = "source");
  /// Adds a header the source pulls in: `name` as the source spells it (or the in-memory name),
  /// its content, and (not hashed) where it was found.
  KeyBuilder& header(std::string_view name, std::string_view content,
                     std::string_view resolved_path = {});
  /// Adds the headers of `set` (null or empty: nothing), hashed as one field after every field
  /// added one by one (see the class comment); Key::header_sets keeps the set. Neither copies nor
  /// hashes the set's fields: a set made once serves every key of its scan.
  KeyBuilder& headers(std::shared_ptr<const HeaderSet> set);

  /// Hashes the fields added so far. May be called more than once.
  Key finish() const&;
  /// finish(), the fields moved into the key rather than copied (a key built from files holds
  /// each header's whole content): the builder is left with no fields.
  Key finish() &&;

private:
  Key finish_fields(); ///< the key of m_fields, moved into it
  KeyBuilder& add(KeySection section, std::string_view name, std::string_view value,
                  std::string_view detail = {});

  std::string m_backend;
  std::vector<KeyField> m_fields;
  std::vector<std::shared_ptr<const HeaderSet>> m_sets;
};

} // namespace jitcache
