#pragma once

#include "core/tiers/user/user_tier.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace jitcache::test {

/// A UserTier that forwards every operation to another one (LevelDB's EnvWrapper style) and can
/// be told to fail any one of them, for faults that cannot be caused for real: fail every call
/// of an operation from the Nth on, or only the Nth; hand back the bytes of another request;
/// be slow. Thread-safe.
class FaultyUserTier : public detail::UserTier {
public:
  /// Every operation of a user tier.
  enum class Op {
    get,         ///< Store::get (a copy)
    visit,       ///< an in-place read of an entry
    put,         ///< an entry written
    put_counted, ///< an entry written with the counters of its compile
    remove,
    for_each,
    visit_record, ///< a record read
    put_records,  ///< records written
    add_counters, ///< counters written
    counters,     ///< counters read
    visit_tuning, ///< a tuning record read
    put_tuning,   ///< a tuning record written
    remove_tuning,
    for_each_tuning,
  };
  static constexpr std::size_t k_ops = 14;

  explicit FaultyUserTier(std::shared_ptr<detail::UserTier> inner) : m_inner(std::move(inner)) {}

  /// Calls of `op` number `n` (1-based) and later fail with `code`; 0 = never.
  void fail_from(Op op, int n, ErrorCode code = ErrorCode::io_error) {
    m_code[index(op)] = code;
    m_from[index(op)] = n;
  }
  /// Only call number `n` of `op` fails, with `code`; 0 = none.
  void fail_number(Op op, int n, ErrorCode code = ErrorCode::io_error) {
    m_code[index(op)] = code;
    m_number[index(op)] = n;
  }
  /// Every entry read (get and visit) that finds an entry hands it back damaged: a payload byte
  /// flipped and its key fields those of another request.
  void corrupt_reads(bool on) { m_corrupt = on; }
  /// Every entry read and write first sleeps for `delay`.
  void slow(std::chrono::milliseconds delay) { m_delay_ms = static_cast<int>(delay.count()); }
  /// How often `op` was called.
  int calls(Op op) const { return m_calls[index(op)]; }
  /// Entry reads (get and visit) and entry writes (put, put_counted).
  int reads() const { return calls(Op::get) + calls(Op::visit); }
  int writes() const { return calls(Op::put) + calls(Op::put_counted); }

  std::string name() const override { return m_inner->name(); }
  bool writable() const override { return m_inner->writable(); }
  Expected<std::optional<Entry>> get(const Digest& key) override {
    if (auto failed = fault(Op::get))
      return *failed;
    auto got = m_inner->get(key);
    if (m_corrupt && got && *got)
      damage(**got);
    return got;
  }
  Expected<Visit> visit(const Digest& key,
                        const std::function<void(const EntryView&)>& use) override {
    if (auto failed = fault(Op::visit))
      return *failed;
    if (!m_corrupt)
      return m_inner->visit(key, use);
    return m_inner->visit(key, [&](const EntryView& view) {
      Entry copy(std::string(view.backend), std::string(view.payload), std::string(view.metadata),
                 view.compile_ns);
      copy.key_fields = std::string(view.key_fields);
      damage(copy);
      use(EntryView(copy));
    });
  }
  Expected<void> put(const Digest& key, const Entry& entry) override {
    if (auto failed = fault(Op::put))
      return *failed;
    return m_inner->put(key, entry);
  }
  Expected<void> put(const Digest& key, const Entry& entry, const Stats& counters) override {
    if (auto failed = fault(Op::put_counted))
      return *failed;
    return m_inner->put(key, entry, counters);
  }
  Expected<bool> remove(const Digest& key) override {
    if (auto failed = fault(Op::remove))
      return *failed;
    return m_inner->remove(key);
  }
  Expected<void> for_each(const std::function<void(const Item&)>& fn) override {
    if (auto failed = fault(Op::for_each))
      return *failed;
    return m_inner->for_each(fn);
  }
  Expected<bool> visit_record(const Digest& name,
                              const std::function<void(std::string_view)>& use) override {
    if (auto failed = fault(Op::visit_record))
      return *failed;
    return m_inner->visit_record(name, use);
  }
  Expected<void> put_records(const detail::Records& records) override {
    if (auto failed = fault(Op::put_records))
      return *failed;
    return m_inner->put_records(records);
  }
  Expected<bool> visit_tuning(const Digest& name,
                              const std::function<void(std::string_view)>& use) override {
    if (auto failed = fault(Op::visit_tuning))
      return *failed;
    return m_inner->visit_tuning(name, use);
  }
  Expected<void> put_tuning(const Digest& name, std::string_view bytes) override {
    if (auto failed = fault(Op::put_tuning))
      return *failed;
    return m_inner->put_tuning(name, bytes);
  }
  Expected<bool> remove_tuning(const Digest& name) override {
    if (auto failed = fault(Op::remove_tuning))
      return *failed;
    return m_inner->remove_tuning(name);
  }
  Expected<void>
  for_each_tuning(const std::function<void(const Digest&, std::string_view)>& fn) override {
    if (auto failed = fault(Op::for_each_tuning))
      return *failed;
    return m_inner->for_each_tuning(fn);
  }
  Expected<void> add_counters(const Stats& delta) override {
    if (auto failed = fault(Op::add_counters))
      return *failed;
    return m_inner->add_counters(delta);
  }
  Expected<Stats> counters() override {
    if (auto failed = fault(Op::counters))
      return *failed;
    return m_inner->counters();
  }
  Expected<detail::CacheDir> lease_dir() const override { return m_inner->lease_dir(); }

private:
  static std::size_t index(Op op) { return static_cast<std::size_t>(op); }
  static void damage(Entry& entry) {
    if (!entry.payload.empty())
      entry.payload[entry.payload.size() / 2] ^= 0x5a;
    entry.key_fields += "(another request)";
  }
  // Counts the call; the injected error when this call is to fail.
  std::optional<Error> fault(Op op) {
    const std::size_t i = index(op);
    const int n = ++m_calls[i];
    if (const int ms = m_delay_ms;
        ms && (op == Op::get || op == Op::visit || op == Op::put || op == Op::put_counted))
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    if ((m_from[i] > 0 && n >= m_from[i]) || n == m_number[i])
      return Error(m_code[i],
                   "injected failure of call " + std::to_string(n) + " of " + k_names[i]);
    return std::nullopt;
  }
  static constexpr const char* k_names[k_ops] = {
      "get",          "visit",        "put",           "put_counted",    "remove",
      "for_each",     "visit_record", "put_records",   "add_counters",   "counters",
      "visit_tuning", "put_tuning",   "remove_tuning", "for_each_tuning"};

  std::shared_ptr<detail::UserTier> m_inner;
  std::array<std::atomic<int>, k_ops> m_from{};
  std::array<std::atomic<int>, k_ops> m_number{};
  std::array<std::atomic<ErrorCode>, k_ops> m_code{};
  std::array<std::atomic<int>, k_ops> m_calls{};
  std::atomic<bool> m_corrupt{false};
  std::atomic<int> m_delay_ms{0};
};

} // namespace jitcache::test
