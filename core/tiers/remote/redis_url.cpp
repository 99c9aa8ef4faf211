#include "core/tiers/remote/redis_url.hpp"

#include <jitcache/version.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

namespace jitcache::detail {

namespace {

Error bad(const std::string& why) {
  return Error(ErrorCode::invalid_argument, why);
}

template <typename T> std::optional<T> number(std::string_view text, T low, T high) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < low ||
      value > high)
    return std::nullopt;
  return value;
}

// %XX escapes, so that a password may hold ':', '@' or '/'.
std::optional<std::string> unescape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned value = 0;
    const std::string_view hex = text.substr(i + 1, 2);
    const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), value, 16);
    if (hex.size() != 2 || ec != std::errc() || end != hex.data() + hex.size())
      return std::nullopt;
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

// One `name=value` of the query.
std::optional<Error> set_parameter(RedisUrl& url, std::string_view name, std::string_view value) {
  const auto flag = [&](bool& field) -> std::optional<Error> {
    if (value != "0" && value != "1")
      return bad(std::string(name) + " must be 0 or 1");
    field = value == "1";
    return std::nullopt;
  };
  const auto millis = [&](std::chrono::milliseconds& field, long low) -> std::optional<Error> {
    auto n = number<long>(value, low, k_remote_max_lease.count());
    if (!n)
      return bad(std::string(name) + " must be a number of milliseconds from " +
                 std::to_string(low) + " to " + std::to_string(k_remote_max_lease.count()));
    field = std::chrono::milliseconds(*n);
    return std::nullopt;
  };
  if (name == "timeout_ms")
    return millis(url.timeout, 1);
  if (name == "backoff_ms")
    return millis(url.back_off, 0);
  if (name == "lease_ms")
    return millis(url.lease, 10);
  if (name == "readonly")
    return flag(url.read_only);
  if (name == "unsigned")
    return flag(url.allow_unsigned);
  if (name == "max_bytes") {
    auto n = number<std::uint64_t>(value, 1, k_remote_max_bytes_limit);
    if (!n)
      return bad("max_bytes must be a number of bytes from 1 to " +
                 std::to_string(k_remote_max_bytes_limit));
    url.max_bytes = *n;
    return std::nullopt;
  }
  if (name == "prefix") {
    auto prefix = unescape(value);
    if (!prefix)
      return bad("prefix has a bad %-escape");
    url.prefix = *prefix;
    return std::nullopt;
  }
  return bad(
      "unknown parameter '" + std::string(name) +
      "' (expected timeout_ms, backoff_ms, lease_ms, prefix, readonly, unsigned, max_bytes)");
}

} // namespace

std::string RedisUrl::display() const {
  std::string out = "redis://";
  if (!user.empty() || !password.empty())
    out += user + (password.empty() ? "" : ":***") + "@";
  out += host.find(':') != std::string::npos ? "[" + host + "]" : host;
  out += ":" + std::to_string(port);
  if (db)
    out += "/" + std::to_string(db);
  return out;
}

Expected<RedisUrl> parse_redis_url(std::string_view text) {
  constexpr std::string_view scheme = "redis://";
  if (text.substr(0, scheme.size()) != scheme)
    return bad("not a redis:// URL");
  RedisUrl url;
  url.text = std::string(text);
  url.prefix = "jitcache:v" + std::to_string(k_format_version) + ":";
  std::string_view rest = text.substr(scheme.size());
  std::string_view query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string_view path;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view auth = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const auto colon = auth.find(':');
    auto user = unescape(auth.substr(0, colon));
    auto password = colon == std::string_view::npos ? std::optional<std::string>("")
                                                    : unescape(auth.substr(colon + 1));
    if (!user || !password)
      return bad("bad %-escape in the user or password");
    url.user = *user;
    url.password = *password;
    if (colon == std::string_view::npos) // redis://secret@host: a password alone
      std::swap(url.user, url.password);
  }
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    const auto close = rest.find(']');
    if (close == std::string_view::npos)
      return bad("unclosed '[' in the host");
    url.host = std::string(rest.substr(1, close - 1));
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest.front() != ':')
      return bad("expected ':port' after the IPv6 address");
    if (!rest.empty())
      port = rest.substr(1);
    if (rest == ":")
      return bad("empty port");
  } else {
    const auto colon = rest.rfind(':');
    url.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = rest.substr(colon + 1);
      if (port.empty())
        return bad("empty port");
    }
  }
  if (url.host.empty())
    return bad("no host");
  if (!port.empty()) {
    auto n = number<int>(port, 1, 65535);
    if (!n)
      return bad("port '" + std::string(port) + "' is not a number from 1 to 65535");
    url.port = *n;
  }
  if (!path.empty()) {
    auto db = number<int>(path, 0, 1 << 20);
    if (!db)
      return bad("database '" + std::string(path) + "' is not a number");
    url.db = *db;
  }
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty())
      continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      return bad("parameter '" + std::string(item) + "' has no value");
    if (auto error = set_parameter(url, item.substr(0, eq), item.substr(eq + 1)))
      return std::move(*error);
  }
  return url;
}

std::string hide_passwords(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const auto scheme = item.find("://");
    const std::size_t start = scheme == std::string_view::npos ? 0 : scheme + 3;
    // The credentials end at the last '@' (a password given with an unescaped '/' or '?' still
    // ends there; a '@' in the query hides more than the password, never less).
    const auto at = item.rfind('@');
    const std::string_view authority =
        item.substr(start, item.find_first_of("/?", start) - std::min(start, item.size()));
    const auto colon = authority.find(':');
    const bool port_only =
        colon == std::string_view::npos || authority.front() == '[' ||
        authority.find_first_not_of("0123456789", colon + 1) == std::string_view::npos;
    if ((at == std::string_view::npos || at < start) && !port_only) {
      // "user:pass" with no '@': a password with an unescaped ',' split this URL in two.
      out += std::string(item.substr(0, start + colon + 1)) + "***";
    } else if (at == std::string_view::npos || at < start) {
      out += item;
    } else {
      const std::string_view auth = item.substr(start, at - start);
      const auto colon = auth.find(':');
      out +=
          std::string(item.substr(0, start)) +
          (colon == std::string_view::npos ? "***" : std::string(auth.substr(0, colon)) + ":***") +
          std::string(item.substr(at));
    }
    if (comma != std::string_view::npos)
      out += ',';
  }
  return out;
}

std::vector<RedisUrl> parse_redis_urls(std::string_view text,
                                       std::vector<std::string>& complaints) {
  std::vector<RedisUrl> urls;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front())))
      item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back())))
      item.remove_suffix(1);
    if (item.empty())
      continue;
    auto url = parse_redis_url(item);
    if (url) {
      urls.push_back(std::move(*url));
      continue;
    }
    complaints.push_back(hide_passwords(item) + ": " + url.error().message +
                         "; that remote is skipped");
  }
  return urls;
}

} // namespace jitcache::detail
