#pragma once

#include <jitcache/digest.hpp>
#include <jitcache/export.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache {

/// Version of the key layout. Bumping it makes every earlier entry a miss.
inline constexpr int k_key_schema_version = 2;

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

/// A finished key: the digest plus the fields it was made of.
struct Key {
  Digest digest;
  std::string backend;
  std::vector<KeyField> fields; ///< in hashing order
  std::string stored_fields;    ///< the fields in their stored form, computed once by finish()
};

/// Builds a Key: SHA-256 over tagged, length-delimited fields, so that no two different
/// field lists hash alike ("-I -O2" vs "-I-O2", a byte moved across a field boundary).
/// Each field contributes: section byte, u64le name length, name, u64le value length, value,
/// where a value over 128 bytes (a source, a header's content) is hashed as "sha256:<hex>" of
/// it, the form Key::stored_fields holds (schema 2). Fields are hashed in section order, and
/// within a section in the order added.
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
  /// header(), the content given in its stored form: the content itself when it is at most 128
  /// bytes, else "sha256:" and the lowercase hex SHA-256 of it. The key is the one header() makes
  /// with the content, which is neither copied nor hashed again (a key built from a thousand
  /// headers); Key::fields holds the stored form. `stored` in another form makes another key.
  KeyBuilder& stored_header(std::string_view name, std::string_view stored,
                            std::string_view resolved_path = {});

  /// Makes room for `fields` more fields, changing no key: a caller about to add many (a scan's
  /// thousand headers) spares the fields' regrowth, each a large allocation and its page faults.
  KeyBuilder& reserve(std::size_t fields);

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
};

} // namespace jitcache
