#pragma once

#include <jitcache/store.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace jitcache::test {

/// A Store that forwards every call to another one, and can be told to misbehave (LevelDB's
/// ErrorEnv style), for faults that cannot be caused for real: fail every put from the Nth on,
/// fail only the Nth put, fail every get, hand back the bytes of another request, be slow.
class FaultyStore : public Store {
public:
  explicit FaultyStore(std::shared_ptr<Store> inner) : m_inner(std::move(inner)) {}

  /// Puts number `n` (1-based) and later fail with `code`; 0 = never.
  void fail_puts_from(int n, ErrorCode code = ErrorCode::store_full) {
    m_put_code = code;
    m_fail_put_from = n;
  }
  /// Only put number `n` (1-based) fails, with `code` (an I/O error, say); 0 = none.
  void fail_put_number(int n, ErrorCode code = ErrorCode::io_error) {
    m_put_code = code;
    m_fail_put_number = n;
  }
  /// Every get fails with io_error.
  void fail_gets(bool on) { m_fail_gets = on; }
  /// Every get that finds an entry returns it damaged: a payload byte flipped and its key
  /// fields those of another request (bytes that belong to a different key).
  void corrupt_gets(bool on) { m_corrupt_gets = on; }
  /// Every get and put first sleeps for `delay`.
  void slow(std::chrono::milliseconds delay) { m_delay_ms = delay.count(); }
  int puts() const { return m_puts; }
  int gets() const { return m_gets; }

  std::string name() const override { return "faulty"; }
  bool writable() const override { return m_inner->writable(); }
  Expected<std::optional<Entry>> get(const Digest& key) override {
    ++m_gets;
    pause();
    if (m_fail_gets)
      return Error(ErrorCode::io_error, "injected read failure");
    auto got = m_inner->get(key);
    if (m_corrupt_gets && got && *got) {
      Entry& entry = **got;
      if (!entry.payload.empty())
        entry.payload[entry.payload.size() / 2] ^= 0x5a;
      entry.key_fields += "(another request)";
    }
    return got;
  }
  Expected<void> put(const Digest& key, const Entry& entry) override {
    const int n = ++m_puts;
    pause();
    if ((m_fail_put_from > 0 && n >= m_fail_put_from) || n == m_fail_put_number)
      return Error(m_put_code, "injected write failure on put " + std::to_string(n));
    return m_inner->put(key, entry);
  }
  Expected<bool> remove(const Digest& key) override { return m_inner->remove(key); }
  Expected<void> for_each(const std::function<void(const Item&)>& fn) override {
    return m_inner->for_each(fn);
  }

private:
  void pause() const {
    if (const int ms = m_delay_ms)
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }

  std::shared_ptr<Store> m_inner;
  std::atomic<int> m_fail_put_from{0};
  std::atomic<int> m_fail_put_number{0};
  std::atomic<ErrorCode> m_put_code{ErrorCode::store_full};
  std::atomic<bool> m_fail_gets{false};
  std::atomic<bool> m_corrupt_gets{false};
  std::atomic<int> m_delay_ms{0};
  std::atomic<int> m_puts{0};
  std::atomic<int> m_gets{0};
};

} // namespace jitcache::test
