#pragma once

#include <jitcache/store.hpp>

#include <atomic>
#include <memory>

namespace jitcache::test {

/// A Store that forwards every call to another one, and can be told to fail (LevelDB's ErrorEnv
/// style): fail every put from the Nth on, or fail every get. For faults that cannot be caused
/// for real.
class FaultyStore : public Store {
public:
  explicit FaultyStore(std::shared_ptr<Store> inner) : m_inner(std::move(inner)) {}

  /// Puts number `n` (1-based) and later fail with `code`; 0 = never.
  void fail_puts_from(int n, ErrorCode code = ErrorCode::store_full) {
    m_fail_put_from = n;
    m_put_code = code;
  }
  /// Every get fails with io_error.
  void fail_gets(bool on) { m_fail_gets = on; }
  int puts() const { return m_puts; }
  int gets() const { return m_gets; }

  std::string name() const override { return "faulty"; }
  bool writable() const override { return m_inner->writable(); }
  Expected<std::optional<Entry>> get(const Digest& key) override {
    ++m_gets;
    if (m_fail_gets)
      return Error(ErrorCode::io_error, "injected read failure");
    return m_inner->get(key);
  }
  Expected<void> put(const Digest& key, const Entry& entry) override {
    const int n = ++m_puts;
    if (m_fail_put_from > 0 && n >= m_fail_put_from)
      return Error(m_put_code, "injected write failure on put " + std::to_string(n));
    return m_inner->put(key, entry);
  }
  Expected<bool> remove(const Digest& key) override { return m_inner->remove(key); }
  Expected<void> for_each(const std::function<void(const Item&)>& fn) override {
    return m_inner->for_each(fn);
  }

private:
  std::shared_ptr<Store> m_inner;
  std::atomic<int> m_fail_put_from{0};
  ErrorCode m_put_code = ErrorCode::store_full;
  std::atomic<bool> m_fail_gets{false};
  std::atomic<int> m_puts{0};
  std::atomic<int> m_gets{0};
};

} // namespace jitcache::test
