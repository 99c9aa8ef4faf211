#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>

namespace jitcache::detail {

/// 128-bit hash of a request's raw arguments: what the memory tier of handles finds a repeated
/// request by, and part of the name its key is remembered under.
struct RequestHash {
  std::uint64_t lo = 0, hi = 0;
  friend bool operator<(const RequestHash& a, const RequestHash& b) {
    return std::tie(a.hi, a.lo) < std::tie(b.hi, b.lo);
  }
  /// The 16 bytes, for a name made of strings.
  std::string_view bytes() const { return {reinterpret_cast<const char*>(this), sizeof *this}; }
};

/// What a request's arguments are given to, part by part where they lie (Runtime::arguments):
/// the hash below, or a scan of them.
class RequestParts {
public:
  virtual ~RequestParts() = default;
  /// Adds `part`.
  virtual void add(std::string_view part) = 0;
  /// Adds a list's length, before its parts (an empty list and a missing one differ).
  virtual void add_count(std::size_t count) = 0;
};

/// Hashes a request's arguments part by part where they lie (XXH3-128, each part
/// length-delimited), so that a repeated request copies nothing to be found: a 10 KB source is
/// read once, by the hash.
class RequestHasher final : public RequestParts {
public:
  RequestHasher();
  RequestHasher(const RequestHasher&) = delete;
  RequestHasher& operator=(const RequestHasher&) = delete;

  /// Adds `part`; its length goes first, so that no two sequences of parts hash alike.
  void add(std::string_view part) override;
  void add_count(std::size_t count) override;
  /// The hash of every part added so far.
  RequestHash digest() const;

private:
  // XXH3_state_t, whose definition needs xxhash.h's static-linking section (request_hash.cpp
  // checks that it fits).
  alignas(64) unsigned char m_state[576];
};

} // namespace jitcache::detail
