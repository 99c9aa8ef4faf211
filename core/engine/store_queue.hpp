#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace jitcache::detail {

/// The deferred-store queue: tasks (reading a binary from the runtime, then storing it) run on
/// up to `max_workers` threads, started as tasks arrive, so that a slow store never holds up
/// another key's (whose lease other processes may be waiting on). Thread-safe. The destructor
/// waits for every task pushed, then stops the workers.
class StoreQueue {
public:
  explicit StoreQueue(std::size_t max_workers);
  ~StoreQueue();
  StoreQueue(const StoreQueue&) = delete;
  StoreQueue& operator=(const StoreQueue&) = delete;

  /// Runs `task` on a worker. What `task` holds is released before wait_idle() sees it done.
  void push(std::function<void()> task);
  /// Waits until every task pushed so far has finished.
  void wait_idle();

private:
  void work();

  const std::size_t m_max_workers;
  std::mutex m_mutex;
  std::condition_variable m_queue_cv;
  std::condition_variable m_idle_cv;
  std::deque<std::function<void()>> m_queue;
  std::size_t m_running = 0;
  bool m_stopping = false;
  std::vector<std::thread> m_workers;
};

} // namespace jitcache::detail
