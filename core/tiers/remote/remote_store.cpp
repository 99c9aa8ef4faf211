#include "core/tiers/remote/remote_store.hpp"

#include "core/support/fork_guard.hpp"
#include "core/support/log.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/remote/remote_seal.hpp"

#include <algorithm>
#include <cstdint>

namespace jitcache::detail {

namespace {

// Idle connections kept per remote: as many as threads that commonly read at once.
constexpr std::size_t k_max_idle = 8;

// Keys asked for per SCAN page, and how many pages a listing may take for each key DBSIZE
// counts: Redis visits at least COUNT buckets per page (or ten times as many empty ones), and a
// table has at most a few buckets per key, so a real server ends well within this; a server
// whose cursor never comes back to 0 is stopped by it.
constexpr long long k_scan_count = 1000;
constexpr unsigned long long k_scan_pages_per_key = 32;
constexpr unsigned long long k_scan_min_pages = 64;
// Whatever DBSIZE says: a billion keys are 10^6 pages.
constexpr unsigned long long k_scan_max_pages = 1ull << 20;

// `text` as a SCAN MATCH pattern that matches only itself (a prefix is a name, not a glob).
std::string glob_escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

// a + b, or the largest value when that does not fit.
std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

} // namespace

RemoteStore::RemoteStore(RedisUrl url, std::string hmac_key)
    : m_url(std::move(url)), m_hmac_key(std::move(hmac_key)), m_idle_generation(fork_generation()) {
}

bool RemoteStore::writable() const {
  return !m_url.read_only && readable();
}

bool RemoteStore::readable() const {
  return !m_hmac_key.empty() || m_url.allow_unsigned;
}

std::string RemoteStore::signing() const {
  std::string mode;
  if (!m_hmac_key.empty())
    mode = "signed: entries are signed with the key, unsigned or foreign ones are refused";
  else if (m_url.allow_unsigned)
    mode = "unsigned (unsigned=1): whoever can write to the server can plant binaries";
  else
    mode = "no key: neither read nor written to (set JITCACHE_REMOTE_KEY to sign and check, or "
           "unsigned=1 to trust the server)";
  return m_url.read_only ? mode + "; readonly=1" : mode;
}

Expected<RedisReply> RemoteStore::run(const std::vector<std::string_view>& args) {
  std::unique_ptr<RedisConnection> connection;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_idle_generation != fork_generation()) {
      // Closing a child's copy of a socket leaves the parent's connection open.
      m_idle.clear();
      m_idle_generation = fork_generation();
    }
    if (!m_idle.empty()) {
      connection = std::move(m_idle.back());
      m_idle.pop_back();
    }
  }
  if (!connection) {
    auto opened = RedisConnection::open(m_url);
    if (!opened)
      return std::move(opened).error();
    connection = std::move(*opened);
  }
  auto reply = connection->run(args);
  std::lock_guard<std::mutex> lock(m_mutex);
  if (!reply && reply.error().code == ErrorCode::io_error)
    m_idle.clear(); // the next command after the back-off connects afresh
  else if (m_idle.size() < k_max_idle)
    m_idle.push_back(std::move(connection));
  return reply;
}

std::variant<EntryView, Store::Visit> RemoteStore::open(const Digest& key, std::string_view value) {
  const Unsealed sealed = unseal(key, value, m_hmac_key);
  std::string why = sealed.why;
  if (sealed.status == Unsealed::Status::ok) {
    auto entry = view_entry(key, sealed.entry);
    if (entry)
      return *entry;
    why = entry.error().message;
  }
  const bool refused = sealed.status == Unsealed::Status::refused;
  ++(refused ? m_refused : m_corrupt);
  log::write_once(LogLevel::warn, "remote:" + key.hex(),
                  "remote entry " + key.hex() + " on " + m_url.display() +
                      (refused ? " refused: " : " is damaged: ") + why + "; treated as a miss");
  return refused ? Visit::untrusted(std::move(why)) : Visit::damaged(std::move(why));
}

Expected<std::optional<Entry>> RemoteStore::get(const Digest& key) {
  std::optional<Entry> out;
  auto seen = visit(key, [&](const EntryView& entry) { out = to_entry(entry); });
  if (!seen)
    return std::move(seen).error();
  return out;
}

Expected<std::optional<std::string>> RemoteStore::value(const Digest& key) {
  // GETRANGE, not GET: the server sends at most one byte more than a value this store would
  // accept, whatever another host with a larger max_bytes stored there.
  const std::uint64_t largest = saturating_add(m_url.max_bytes, k_seal_overhead);
  const std::string last = std::to_string(std::min<std::uint64_t>(largest, INT64_MAX));
  auto reply = run({"GETRANGE", redis_key(key.hex()), "0", last});
  if (!reply)
    return std::move(reply).error();
  // GETRANGE answers an absent key with an empty string; no sealed value is empty.
  if (reply->kind != RedisReply::Kind::string || reply->text.empty())
    return std::optional<std::string>();
  if (reply->text.size() > largest) {
    log::write_once(LogLevel::warn, "remote-large:" + key.hex(),
                    "remote entry " + key.hex() + " on " + m_url.display() +
                        " is larger than max_bytes (" + std::to_string(m_url.max_bytes) +
                        "); not read, treated as a miss");
    return std::optional<std::string>();
  }
  return std::optional<std::string>(std::move(reply->text));
}

Expected<Store::Visit> RemoteStore::visit(const Digest& key,
                                          const std::function<void(const EntryView&)>& use) {
  if (!readable())
    return Visit::miss(); // nothing read could be checked: not asked at all
  auto value = this->value(key);
  if (!value)
    return std::move(value).error();
  if (!*value)
    return Visit::miss();
  auto entry = open(key, **value);
  if (auto* bad = std::get_if<Visit>(&entry))
    return std::move(*bad);
  use(std::get<EntryView>(entry));
  return Visit::hit();
}

Expected<void> RemoteStore::put(const Digest& key, const Entry& entry) {
  if (!writable())
    return Error(ErrorCode::read_only,
                 "remote " + m_url.display() + " is not written to (" + signing() + ")");
  const std::string bytes = encode_entry(key, entry);
  if (!fits(bytes.size()))
    return Error(ErrorCode::store_full, "an entry of " + std::to_string(bytes.size()) +
                                            " bytes is over the remote's max_bytes (" +
                                            std::to_string(m_url.max_bytes) + "); not sent");
  const std::string value = seal(key, bytes, m_hmac_key);
  auto reply = run({"SET", redis_key(key.hex()), value});
  if (!reply)
    return std::move(reply).error();
  return {};
}

Expected<bool> RemoteStore::remove(const Digest& key) {
  if (!writable())
    return Error(ErrorCode::read_only, "remote " + m_url.display() + " is not written to");
  auto reply = run({"DEL", redis_key(key.hex())});
  if (!reply)
    return std::move(reply).error();
  return reply->integer > 0;
}

Expected<void> RemoteStore::ping() {
  auto reply = run({"PING"});
  if (!reply)
    return std::move(reply).error();
  return {};
}

Expected<void> RemoteStore::for_each(const std::function<void(const Item&)>& fn) {
  if (!readable())
    return Error(ErrorCode::unsupported, m_url.display() + " is not read (" + signing() + ")");
  const auto other = [&](const char* command) {
    return Error(ErrorCode::io_error,
                 m_url.display() + " answered " + command + " with something else");
  };
  auto size = run({"DBSIZE"});
  if (!size)
    return std::move(size).error();
  if (size->kind != RedisReply::Kind::integer || size->integer < 0)
    return other("DBSIZE");
  const unsigned long long keys = static_cast<unsigned long long>(size->integer);
  const unsigned long long max_pages = std::min(
      k_scan_max_pages, k_scan_min_pages + k_scan_pages_per_key *
                                               std::min(keys, k_scan_max_pages * k_scan_count) /
                                               k_scan_count);
  const std::string pattern = glob_escaped(m_url.prefix) + "*";
  const std::string count = std::to_string(k_scan_count);
  std::string cursor = "0";
  for (unsigned long long pages = 0;; ++pages) {
    if (pages == max_pages)
      return Error(ErrorCode::io_error, m_url.display() + ": SCAN did not end after " +
                                            std::to_string(pages) + " pages (DBSIZE says " +
                                            std::to_string(keys) + " keys); stopped");
    auto page = run({"SCAN", cursor, "MATCH", pattern, "COUNT", count});
    if (!page)
      return std::move(page).error();
    if (page->kind != RedisReply::Kind::array || page->items.size() != 2 ||
        page->items[0].kind != RedisReply::Kind::string ||
        page->items[1].kind != RedisReply::Kind::array)
      return other("SCAN");
    cursor = page->items[0].text;
    if (cursor.empty() || cursor.find_first_not_of("0123456789") != std::string::npos)
      return other("SCAN");
    for (const RedisReply& name : page->items[1].items) {
      // Only names that start with the prefix: whatever the server says matched.
      if (name.kind != RedisReply::Kind::string ||
          name.text.compare(0, m_url.prefix.size(), m_url.prefix) != 0)
        continue;
      auto digest = Digest::from_hex(std::string_view(name.text).substr(m_url.prefix.size()));
      if (!digest)
        continue; // a lease
      auto value = this->value(*digest);
      if (!value)
        return std::move(value).error();
      if (!*value)
        continue; // removed since the SCAN, or too large to read
      Item item;
      item.key = *digest;
      item.bytes = (*value)->size();
      const Unsealed sealed = unseal(item.key, **value, m_hmac_key);
      auto backend = sealed.status == Unsealed::Status::ok
                         ? verify_entry(item.key, sealed.entry)
                         : Expected<std::string>(Error(ErrorCode::corrupt, sealed.why));
      item.valid = static_cast<bool>(backend);
      if (backend)
        item.backend = *backend;
      fn(item);
    }
    if (cursor == "0")
      return {};
  }
}

} // namespace jitcache::detail
