#include "core/remote_store.hpp"

#include "core/entry_codec.hpp"
#include "core/fork_guard.hpp"
#include "core/log.hpp"
#include "core/remote_seal.hpp"

namespace jitcache {

namespace {

// Idle connections kept per remote: as many as threads that commonly read at once.
constexpr std::size_t k_max_idle = 8;

} // namespace

RemoteStore::RemoteStore(RedisUrl url, std::string hmac_key)
    : m_url(std::move(url)), m_hmac_key(std::move(hmac_key)), m_idle_generation(fork_generation()) {
}

bool RemoteStore::writable() const {
  return !m_url.read_only && (!m_hmac_key.empty() || m_url.allow_unsigned);
}

std::string RemoteStore::signing() const {
  std::string mode;
  if (!m_hmac_key.empty())
    mode = "signed: entries are signed with the key, unsigned or foreign ones are refused";
  else if (m_url.allow_unsigned)
    mode = "unsigned (unsigned=1): whoever can write to the server can plant binaries";
  else
    mode = "unsigned: reads trust the server; not written to (set JITCACHE_REMOTE_KEY to sign, "
           "or unsigned=1)";
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

std::optional<EntryView> RemoteStore::open(const Digest& key, std::string_view value) {
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
  return std::nullopt;
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
  const std::string last = std::to_string(m_url.max_bytes + k_seal_overhead);
  auto reply = run({"GETRANGE", redis_key(key.hex()), "0", last});
  if (!reply)
    return std::move(reply).error();
  // GETRANGE answers an absent key with an empty string; no sealed value is empty.
  if (reply->kind != RedisReply::Kind::string || reply->text.empty())
    return std::optional<std::string>();
  if (reply->text.size() > m_url.max_bytes + k_seal_overhead) {
    log::write_once(LogLevel::warn, "remote-large:" + key.hex(),
                    "remote entry " + key.hex() + " on " + m_url.display() +
                        " is larger than max_bytes (" + std::to_string(m_url.max_bytes) +
                        "); not read, treated as a miss");
    return std::optional<std::string>();
  }
  return std::optional<std::string>(std::move(reply->text));
}

Expected<bool> RemoteStore::visit(const Digest& key,
                                  const std::function<void(const EntryView&)>& use) {
  auto value = this->value(key);
  if (!value)
    return std::move(value).error();
  if (!*value)
    return false;
  auto entry = open(key, **value);
  if (!entry)
    return false;
  use(*entry);
  return true;
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
  const std::string pattern = redis_key("*");
  std::string cursor = "0";
  do {
    auto page = run({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (!page)
      return std::move(page).error();
    if (page->kind != RedisReply::Kind::array || page->items.size() != 2)
      return Error(ErrorCode::io_error, m_url.display() + " answered SCAN with something else");
    cursor = page->items[0].text;
    for (const RedisReply& name : page->items[1].items) {
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
  } while (cursor != "0");
  return {};
}

} // namespace jitcache
