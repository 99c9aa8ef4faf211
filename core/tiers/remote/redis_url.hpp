#pragma once

#include <jitcache/expected.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::detail {

/// The default time a remote has to connect (and authenticate), and then to answer each
/// command: small, so that a slow or absent remote costs a hit or a miss little more than no
/// remote at all (loopback and a LAN answer within a millisecond or two).
inline constexpr std::chrono::milliseconds k_remote_timeout{100};
/// What a command may take beyond the timeout for each MiB it sends and receives (a floor of
/// 10 MiB/s): a large entry over a slow link is not a stall, a server that trickles bytes is.
inline constexpr std::chrono::milliseconds k_remote_ms_per_mib{100};
/// How long a remote that failed is left alone before it is tried again.
inline constexpr std::chrono::milliseconds k_remote_back_off{30000};
/// How long a fleet-wide compile lease lasts unless its holder renews it (it renews a third of
/// the way through): a holder that dies is taken over within this.
inline constexpr std::chrono::milliseconds k_remote_lease{10000};
/// The longest lease_ms (and timeout_ms, backoff_ms) a URL may say: a lease found on the server
/// that expires later than this was not set by a holder (RemoteLease).
inline constexpr std::chrono::milliseconds k_remote_max_lease{3600000};
/// Entries larger than this are not sent to a remote (a fleet's network is better spent on
/// many kernels than on one huge binary; each host compiles it itself).
inline constexpr std::uint64_t k_remote_max_bytes = 16ull << 20;
/// The largest max_bytes a URL may say (Redis itself keeps at most 512 MiB in a value by
/// default): larger is a mistake, refused rather than left to wrap the arithmetic around it.
inline constexpr std::uint64_t k_remote_max_bytes_limit = 4ull << 30;

/// One remote tier, as JITCACHE_REMOTE names it:
/// `redis://[user:password@]host[:port][/db][?timeout_ms=N&backoff_ms=N&lease_ms=N&prefix=P&
/// readonly=1&unsigned=1&max_bytes=N]`.
struct RedisUrl {
  std::string text;     ///< the URL as given (password included)
  std::string user;     ///< empty: AUTH with the password alone (or no AUTH)
  std::string password; ///< empty: no AUTH
  std::string host;     ///< a name or an address (IPv6 in brackets in the URL, bare here)
  int port = 6379;
  int db = 0;                                             ///< SELECTed after connecting when not 0
  std::chrono::milliseconds timeout = k_remote_timeout;   ///< connect, and each command
  std::chrono::milliseconds back_off = k_remote_back_off; ///< after a failure
  std::chrono::milliseconds lease = k_remote_lease;       ///< see RemoteLease
  /// Put before every key's hex digest. The entry format version is part of the default, so
  /// releases with different formats never read each other's entries.
  std::string prefix;
  bool read_only = false;      ///< readonly=1: never written to
  bool allow_unsigned = false; ///< unsigned=1: written without JITCACHE_REMOTE_KEY
  std::uint64_t max_bytes = k_remote_max_bytes;

  /// The URL with the password replaced by `***`, for messages and `jitcache info`.
  std::string display() const;
};

/// Parses one URL. Errors (invalid_argument): the message says what is wrong (scheme, host,
/// port, db, an unknown or bad parameter); it never repeats the password.
Expected<RedisUrl> parse_redis_url(std::string_view text);

/// `text` (a JITCACHE_REMOTE value) with the password of each URL replaced by `***`.
std::string hide_passwords(std::string_view text);

/// A JITCACHE_REMOTE value: URLs separated by commas, in lookup order. Each bad URL adds one
/// line to `complaints` (naming it, password hidden) and is left out.
std::vector<RedisUrl> parse_redis_urls(std::string_view text, std::vector<std::string>& complaints);

} // namespace jitcache::detail
