#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace jitcache::detail {

/// Collapses concurrent calls for the same key into one: the first caller (the leader) runs the
/// function; callers arriving while it runs wait and receive a copy of its result. Calls after it
/// finished run again (results are not remembered here; the tiers do that).
template <typename K, typename V> class SingleFlight {
public:
  /// Result of run(): the value, and whether this caller ran the function.
  struct Result {
    V value;
    bool leader;
  };

  /// Runs `fn` for `key`, or waits for the run in progress. An exception from `fn` reaches the
  /// leader and every waiter.
  Result run(const K& key, const std::function<V()>& fn) {
    std::shared_ptr<Call> call;
    bool leader = false;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      auto it = m_calls.find(key);
      if (it == m_calls.end()) {
        call = std::make_shared<Call>();
        m_calls.emplace(key, call);
        leader = true;
      } else {
        call = it->second;
      }
    }
    if (!leader) {
      std::unique_lock<std::mutex> lock(call->mutex);
      call->done_cv.wait(lock, [&] { return call->done; });
      if (call->exception)
        std::rethrow_exception(call->exception);
      return {*call->value, false};
    }
    std::optional<V> value;
    std::exception_ptr exception;
    try {
      value.emplace(fn());
    } catch (...) {
      exception = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_calls.erase(key);
    }
    {
      std::lock_guard<std::mutex> lock(call->mutex);
      call->value = value;
      call->exception = exception;
      call->done = true;
    }
    call->done_cv.notify_all();
    if (exception)
      std::rethrow_exception(exception);
    return {std::move(*value), true};
  }

private:
  struct Call {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::optional<V> value;
    std::exception_ptr exception;
  };
  std::mutex m_mutex;
  std::map<K, std::shared_ptr<Call>> m_calls;
};

} // namespace jitcache::detail
