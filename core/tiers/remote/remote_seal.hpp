#pragma once

#include <jitcache/digest.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace jitcache::detail {

/// The form of an entry in a remote tier: the entry's stored bytes (core/tiers/entry_codec) behind
/// a small header that says whether they are signed, and with what:
///
///   offset 0   "JCR1"   magic
///          4   u8       0: unsigned, 1: signed
///          5   32 bytes signed only: HMAC-SHA256 under the fleet's key over the 32-byte key
///                       digest the value is stored under, then the entry bytes
///   5 or 37             the entry bytes
///
/// The digest is inside the MAC so that a signed value copied to another key's name is refused
/// even though its own bytes are intact.
std::string seal(const Digest& key, std::string_view entry_bytes, std::string_view hmac_key);
/// The most bytes seal() adds to the entry's bytes (magic, kind, MAC).
inline constexpr std::size_t k_seal_overhead = 4 + 1 + 32;

/// What unseal() found.
struct Unsealed {
  enum class Status {
    ok,      ///< `entry` holds the entry bytes (still to be verified by entry_codec)
    garbage, ///< not a sealed value at all: damaged, like a damaged local entry
    refused, ///< well-formed but not to be trusted: unsigned, or its signature does not match
  };
  Status status = Status::garbage;
  std::string_view entry; ///< a view into the value
  std::string why;        ///< garbage, refused: one line
};

/// Opens `value` read under `key`. With a non-empty `hmac_key`, only values signed with it for
/// `key` are ok (the MAC is compared in constant time); without one, nothing can be checked and
/// every well-formed value is ok (the server is trusted: see README "Remote tier").
Unsealed unseal(const Digest& key, std::string_view value, std::string_view hmac_key);

} // namespace jitcache::detail
