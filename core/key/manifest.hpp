#pragma once

#include "core/key/dependencies.hpp"
#include "core/key/file_stamp.hpp"
#include "core/support/byte_io.hpp"

#include <jitcache/expected.hpp>
#include <jitcache/key.hpp>

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitcache::detail {

class CacheCore;

// Manifests (ccache's "direct mode"): building a key reads every header a source pulls in, which
// for toolkit-heavy sources (CUB: hundreds of headers) costs far more than loading the binary.
// The user tier remembers, per request, the key and the stamps of the files it was built from;
// a later process that finds every stamp unchanged takes the key without reading a file.

/// A remembered value and the stamps that vouch for it. Either may be held by a part instead: the
/// record named `guards_part` (`payload_part`), whose payload it is (see part_name). The
/// manifests of the keys built from one scan (CuPy's 51 kernels share 4) have the same guards
/// and the same paths, tens of KB each: stored once as parts, named by each manifest.
struct Record {
  Record(std::string guards = {}, std::string payload = {},
         std::optional<Digest> guards_part = std::nullopt,
         std::optional<Digest> payload_part = std::nullopt)
      : guards(std::move(guards)), payload(std::move(payload)), guards_part(guards_part),
        payload_part(payload_part) {}
  std::string guards;  ///< encode_stamps(); empty when guards_part is set
  std::string payload; ///< empty when payload_part is set
  std::optional<Digest> guards_part, payload_part;
};

/// A record read in place: views into its stored bytes.
struct RecordView {
  std::string_view guards, payload;
  std::optional<Digest> guards_part, payload_part;
};

/// The stored form of a record (magic, XXH3 checksum, stamps, payload; another magic when a part
/// is named) and back, in place or copied; nullopt on bytes that are not a whole, intact record.
std::string encode_record(const Record& record);
std::optional<RecordView> view_record(std::string_view bytes);
std::optional<Record> decode_record(std::string_view bytes);

/// The name of the part that holds `bytes`: record_name() of kind "part", so that equal bytes
/// share one part and no other record's name meets it.
Digest part_name(std::string_view bytes);
/// What the part stored as `stored` holds (its record's payload, in place); nullopt when `stored`
/// is not an intact record of a part (one with guards, or naming parts of its own).
std::optional<std::string_view> part_bytes(std::string_view stored);
/// The record `view` whole: each part it names read through `read` (the stored bytes of the record
/// of that name, nullopt when there is none), its payload taken. nullopt when a part is missing
/// or not an intact record without parts of its own: the caller then has no record at all.
std::optional<Record>
with_parts(const RecordView& view,
           const std::function<std::optional<std::string>(const Digest&)>& read);

/// A key's stored form (digest, backend, stored fields) and back; nullopt on malformed bytes.
/// The decoded key has no `fields`, only `stored_fields`: that is all a lookup compares, and
/// decoding hundreds of header fields would cost more than the rest of a hit.
std::string encode_key(const Key& key);
std::optional<Key> decode_key(std::string_view bytes);

/// The name of a record: SHA-256 over `kind` and each part (length-delimited) and jitcache's
/// version. The parts must be every input of what is remembered that is not vouched for by
/// file stamps (for a key: options, source, in-memory headers, identities, current directory).
Digest record_name(std::string_view kind, std::initializer_list<std::string_view> parts);
/// `fields` as "name=value" lines: the text form of identities and compile environments among
/// a record name's parts.
std::string fields_text(const std::vector<std::pair<std::string, std::string>>& fields);

/// A key, and the stamps that vouch for the files it was built from (nullopt: they changed too
/// recently to vouch for anything; the key is right but must not be remembered).
struct GuardedKey {
  Key key;                           ///< when recalled, `fields` is empty (stored_fields is kept)
  std::optional<std::string> guards; ///< encode_stamps()
  bool recalled = false;             ///< taken from a remembered manifest: no file was read
};

/// manifest_key() in two steps, for a caller with slow work to do with the key it will most
/// likely get: CUDA loads a heavy module (milliseconds) while the stat calls that prove a CUB
/// key (hundreds) run. Construction reads the record named `name` (see record_name); when
/// `background` and the record holds enough stamps to be worth a thread, their check starts on
/// one. Not copyable or movable.
class PendingKey {
public:
  using Build = std::function<Expected<std::pair<Key, Dependencies>>()>;
  /// `build` is called by settle() when nothing proven is remembered; what it refers to must
  /// live until then. Without `recall` (a request that reads no file: may_read_files), nothing
  /// is looked up or remembered: settle() builds the key, which costs less than the lookup.
  PendingKey(CacheCore& core, std::string backend, const Digest& name, Build build, bool background,
             bool recall = true);
  PendingKey(const PendingKey&) = delete;
  PendingKey& operator=(const PendingKey&) = delete;

  /// The remembered key (or a package's, see settle()) before it is proven; nullptr when none
  /// is remembered. Only for
  /// work that is thrown away when settle() answers with another digest (looking the entry up
  /// and loading it), never for compiling, storing or counting.
  const Key* guess() const { return m_key ? &*m_key : nullptr; }
  /// The remembered key when every stamp is unchanged (waiting for the check); or, when this
  /// machine remembers none, the key of a package's portable manifest for the same name when
  /// it is proven here (core/key/portable_manifest.hpp; then remembered as this machine's);
  /// otherwise the
  /// key `build` makes, remembered for the next process when it was built from some file, the
  /// stamps can vouch and the user tier is writable. Errors: those of `build`. Call once.
  Expected<GuardedKey> settle();

private:
  /// Remembers `records` (a key's manifest: see manifest_records in manifest.cpp) when recall
  /// is on.
  void remember(const std::vector<std::pair<Digest, Record>>& records);

  CacheCore& m_core;
  std::string m_backend;
  Digest m_name;
  Build m_build;
  struct Check; // shared with the thread, which may outlive this object (it is not joined:
                // a thread's exit costs a CUDA process as much as its start)
  std::shared_ptr<Check> m_check;
  std::optional<Key> m_key; ///< the remembered key
  bool m_recall = true;
};

/// Whether the key of a request whose arguments (Runtime::arguments) are `arguments` may be built
/// from files: every way a source or an option names a header spells "include" or "import"
/// (`#include`, `%:include`, `#import`, `-include`, `__has_include`), unless a line splice or a
/// trigraph splits the word. A request with none of these reads no header: its key is built from
/// its arguments alone (a `-D` value naming a file is still read then, and counted right).
bool may_read_files(std::string_view arguments);

/// The key a request named `name` (record_name) had, when `core` remembers it for `backend`
/// and none of the files it was built from changed since: no file is read. Otherwise `build`
/// builds it, and it is remembered for the next process (when the stamps can vouch and the user
/// tier is writable). Errors: those of `build`.
Expected<GuardedKey> manifest_key(CacheCore& core, const std::string& backend, const Digest& name,
                                  const PendingKey::Build& build);

} // namespace jitcache::detail
