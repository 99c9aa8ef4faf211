#pragma once

#include <jitcache/digest.hpp>

#include <memory>
#include <string_view>

namespace jitcache::detail {

/// Incremental SHA-256. It uses OpenSSL's direct SHA-256 functions, not EVP: the first EVP digest
/// in a process reads openssl.cnf and initialises the default provider, which costs 0.5-0.7 ms,
/// more than the rest of a warm hit's overhead in a fresh process. Not thread-safe; cheap to make.
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  /// Adds `data` to the message.
  void update(std::string_view data);
  /// The digest of everything added. The object must not be used afterwards.
  Digest finish();

private:
  struct State;
  std::unique_ptr<State> m_state;
};

} // namespace jitcache::detail
