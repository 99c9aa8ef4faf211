#include "core/key/manifest.hpp"

#include "core/engine/cache_core.hpp"
#include "core/engine/proven_stamps.hpp"
#include "core/key/known_parts.hpp"
#include "core/key/portable_manifest.hpp"
#include "core/key/sha256.hpp"
#include "core/support/byte_io.hpp"
#include "core/support/sealed_bytes.hpp"

#include <jitcache/version.hpp>

#include <filesystem>
#include <future>
#include <system_error>
#include <thread>

namespace jitcache::detail {

namespace {

constexpr std::string_view k_record_magic = "JCR1";
// A record that names a part: a byte saying which (bit 0 the guards, bit 1 the payload), then the
// guards and the payload, each sized, a part by its digest's 32 bytes.
constexpr std::string_view k_parted_magic = "JCR2";
// Stamps worth checking on a thread of their own: about 70 (some 50 bytes each) take longer to
// stat than a thread takes to start (0.06 to 0.1 ms in a CUDA process on an H200 host).
constexpr std::size_t k_background_bytes = 4096;
// The same for a portable manifest (its paths are longer, and a proof makes the stamps too).
constexpr std::size_t k_background_portable_bytes = 16384;

} // namespace

std::string encode_record(const Record& record) {
  std::string body;
  if (!record.guards_part && !record.payload_part) {
    append_sized(body, record.guards);
    append_sized(body, record.payload);
    return seal(k_record_magic, body);
  }
  body.push_back(static_cast<char>((record.guards_part ? 1 : 0) | (record.payload_part ? 2 : 0)));
  const auto append = [&](const std::optional<Digest>& part, const std::string& bytes) {
    if (part)
      append_sized(body, std::string_view(reinterpret_cast<const char*>(part->bytes.data()),
                                          part->bytes.size()));
    else
      append_sized(body, bytes);
  };
  append(record.guards_part, record.guards);
  append(record.payload_part, record.payload);
  return seal(k_parted_magic, body);
}

std::optional<RecordView> view_record(std::string_view bytes) {
  RecordView record;
  if (auto in = unseal(k_record_magic, bytes)) {
    if (!take_sized(*in, record.guards) || !take_sized(*in, record.payload) || !in->empty())
      return std::nullopt;
    return record;
  }
  auto in = unseal(k_parted_magic, bytes);
  if (!in || in->empty())
    return std::nullopt;
  const auto which = static_cast<unsigned char>(in->front());
  in->remove_prefix(1);
  if (which == 0 || which > 3)
    return std::nullopt;
  const auto take = [&](bool is_part, std::string_view& field, std::optional<Digest>& part) {
    if (!take_sized(*in, field))
      return false;
    if (!is_part)
      return true;
    Digest digest;
    if (field.size() != digest.bytes.size())
      return false;
    std::copy(field.begin(), field.end(), digest.bytes.begin());
    part = digest;
    field = {};
    return true;
  };
  if (!take(which & 1, record.guards, record.guards_part) ||
      !take(which & 2, record.payload, record.payload_part) || !in->empty())
    return std::nullopt;
  return record;
}

std::optional<Record> decode_record(std::string_view bytes) {
  auto view = view_record(bytes);
  if (!view)
    return std::nullopt;
  return Record{std::string(view->guards), std::string(view->payload), view->guards_part,
                view->payload_part};
}

Digest part_name(std::string_view bytes) {
  return record_name("part", {bytes});
}

std::optional<std::string_view> part_bytes(std::string_view stored) {
  auto held = view_record(stored);
  if (!held || held->guards_part || held->payload_part || !held->guards.empty())
    return std::nullopt;
  return held->payload;
}

std::optional<Record>
with_parts(const RecordView& view,
           const std::function<std::optional<std::string>(const Digest&)>& read) {
  Record whole{std::string(view.guards), std::string(view.payload), std::nullopt, std::nullopt};
  for (auto [part, into] : {std::pair{&view.guards_part, &whole.guards},
                            std::pair{&view.payload_part, &whole.payload}}) {
    if (!*part)
      continue;
    auto bytes = read(**part);
    auto held = bytes ? part_bytes(*bytes) : std::nullopt;
    if (!held)
      return std::nullopt;
    *into = *held;
  }
  return whole;
}

std::string encode_key(const Key& key) {
  std::string out(reinterpret_cast<const char*>(key.digest.bytes.data()), key.digest.bytes.size());
  append_sized(out, key.backend);
  append_sized(out, key.stored_fields);
  return out;
}

std::optional<Key> decode_key(std::string_view in) {
  Key key;
  if (in.size() < key.digest.bytes.size())
    return std::nullopt;
  std::copy(in.begin(), in.begin() + key.digest.bytes.size(), key.digest.bytes.begin());
  in.remove_prefix(key.digest.bytes.size());
  if (!take_sized(in, key.backend) || !take_sized(in, key.stored_fields) || !in.empty())
    return std::nullopt;
  return key;
}

Digest record_name(std::string_view kind, std::initializer_list<std::string_view> parts) {
  std::string framed;
  append_sized(framed, kind);
  append_sized(framed, k_version);
  for (std::string_view part : parts)
    append_sized(framed, part);
  Sha256 sha;
  sha.update(framed);
  return sha.finish();
}

std::string fields_text(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [name, value] : fields)
    out += name + "=" + value + "\n";
  return out;
}

namespace {

// The records that remember a key under `name` (a manifest): the key (encode_key()) with the
// stamps that vouch for it, and beside it the paths of its files (encode_paths()), from which
// `jitcache export` makes its portable manifest. The stamps and the paths are parts, themselves
// among the records only where `core` (when given) has not remembered them yet, and before the
// records that name them.
CacheCore::Made manifest_records(CacheCore* core, const Digest& name, const std::string& guards,
                                 std::string key, const Dependencies& deps) {
  std::optional<std::string> paths;
  const auto& vouched = deps.files().vouched;
  std::optional<PartNames> names =
      vouched ? KnownParts::process().names(vouched.get()) : std::nullopt;
  if (!names) {
    paths = encode_paths(deps);
    names = PartNames{part_name(guards), part_name(*paths)};
    if (vouched)
      KnownParts::process().add_names(vouched, *names);
  }
  CacheCore::Made made;
  if (!core || core->claim_part(names->guards))
    made.push_back({names->guards, Record{{}, guards}});
  if (!core || core->claim_part(names->paths)) {
    if (!paths)
      paths = encode_paths(deps);
    made.push_back({names->paths, Record{{}, std::move(*paths)}});
  }
  made.push_back({name, Record{{}, std::move(key), names->guards, std::nullopt}});
  made.push_back({paths_name(name), Record{{}, {}, std::nullopt, names->paths}});
  return made;
}

} // namespace

struct PendingKey::Check {
  std::string guards;                  ///< a remembered key's
  std::optional<std::string> portable; ///< a package's portable manifest, when none is remembered
  StampClock clock = nullptr;
  Digest name;                        ///< the record's name (PendingKey's)
  std::string key;                    ///< encode_key() of the portable manifest's key
  std::optional<Dependencies> proven; ///< what proving `portable` stamped here
  // Whether the key holds on this machine.
  bool prove() {
    if (!portable)
      return ProvenStamps::process().hold(guards);
    auto manifest = decode_portable(*portable);
    InstalledFiles installed;
    auto done = manifest ? prove_portable(*manifest, installed) : std::nullopt;
    if (done)
      proven = std::move(done->deps);
    return done.has_value();
  }
  // This machine's manifest of the key `portable` proved (more stat calls, and the encoding of
  // some thousand paths for a CUB kernel): its record and the paths beside it (for export);
  // none when the stamps cannot vouch (too recent).
  CacheCore::Made made_here() const {
    auto stamps = guards_of(*proven, clock);
    if (!stamps)
      return {};
    return manifest_records(nullptr, name, *stamps, key, *proven);
  }
  bool worth_a_thread() const {
    return portable ? portable->size() >= k_background_portable_bytes
                    : guards.size() >= k_background_bytes;
  }
  std::promise<bool> promise;
  std::future<bool> held = promise.get_future();
  bool started = false; ///< a thread checks the guards and answers through `promise`
  /// With `portable`, the thread goes on to make made_here() (empty when not proven).
  std::promise<CacheCore::Made> made;
  std::shared_future<CacheCore::Made> made_future = made.get_future().share(); // before the thread
};

PendingKey::PendingKey(CacheCore& core, std::string backend, const Digest& name, Build build,
                       bool background, bool recall)
    : m_core(core), m_backend(std::move(backend)), m_name(name), m_build(std::move(build)),
      m_recall(recall) {
  if (!recall)
    return;
  core.peek(m_backend, name, [&](const RecordView& record) {
    if (auto key = decode_key(record.payload); key && key->backend == m_backend) {
      m_key = std::move(*key);
      m_check = std::make_shared<Check>();
      m_check->guards = record.guards;
    }
  });
  if (!m_key)
    if (auto packaged = core.packaged_record(m_backend, name)) {
      auto bytes = portable_key(*packaged);
      if (auto key = bytes ? decode_key(*bytes) : std::nullopt; key && key->backend == m_backend) {
        m_key = std::move(*key);
        m_check = std::make_shared<Check>();
        m_check->portable = std::move(*packaged);
        m_check->clock = core.stamp_clock();
        m_check->name = name;
        m_check->key = std::move(*bytes);
      }
    }
  if (!m_key || !background || !m_check->worth_a_thread())
    return;
  try {
    std::thread([check = m_check] {
      bool held = false;
      try {
        held = check->prove();
      } catch (...) { // out of memory: not proven
      }
      check->promise.set_value(held);
      if (!check->portable)
        return;
      // This machine's manifest, after the answer: settle() does not wait for it.
      CacheCore::Made made;
      try {
        if (held)
          made = check->made_here();
      } catch (...) { // out of memory: not remembered
      }
      check->made.set_value(std::move(made));
    }).detach();
    m_check->started = true;
  } catch (const std::system_error&) {
    // no thread to be had: settle() checks in this one
  }
}

Expected<GuardedKey> PendingKey::settle() {
  if (m_key) {
    // A thread is done with the check once it has answered.
    const bool held = m_check->started ? m_check->held.get() : m_check->prove();
    if (held && !m_check->portable)
      return GuardedKey{std::move(*m_key), std::move(m_check->guards), true};
    if (held && m_check->started) {
      // A package's manifest, proven here, is remembered as this machine's once the thread has
      // made it. Meanwhile the key has no guards: a repeat of the request in this process waits
      // for them (CacheCore::peek) rather than proving the package's again.
      if (m_recall)
        m_core.remember_made(m_backend, m_name, m_check->made_future);
      return GuardedKey{std::move(*m_key), std::nullopt, true};
    }
    if (held) {
      CacheCore::Made made = m_check->made_here();
      GuardedKey out{std::move(*m_key), std::nullopt, true};
      if (!made.empty()) // made without a Cache: the guards' part comes first
        out.guards = made.front().second.payload;
      remember(made);
      return out;
    }
  }
  auto built = m_build();
  if (!built)
    return std::move(built).error();
  const Dependencies& deps = built->second;
  GuardedKey out{std::move(built->first), guards_of(deps, m_core.stamp_clock())};
  // A key built from no file is built from the record's name's own inputs: recalling it would
  // cost more than building it.
  const Dependencies& files = deps.files();
  const bool from_files = !files.read.empty() || !files.absent.empty() || !files.listed.empty();
  if (out.guards && m_recall && from_files)
    remember(manifest_records(&m_core, m_name, *out.guards, encode_key(out.key), deps));
  return out;
}

void PendingKey::remember(const CacheCore::Made& records) {
  if (!m_recall)
    return;
  for (const auto& [name, record] : records)
    m_core.remember(m_backend, name, record);
}

bool may_read_files(std::string_view arguments) {
  for (std::string_view word : {"include", "import", "\\\n", "\\\r\n", "?\?/"})
    if (arguments.find(word) != std::string_view::npos)
      return true;
  return false;
}

Expected<GuardedKey> manifest_key(CacheCore& core, const std::string& backend, const Digest& name,
                                  const PendingKey::Build& build) {
  return PendingKey(core, backend, name, build, false).settle();
}

} // namespace jitcache::detail
