#include "core/engine/store_queue.hpp"

namespace jitcache::detail {

StoreQueue::StoreQueue(std::size_t max_workers) : m_max_workers(max_workers) {}

StoreQueue::~StoreQueue() {
  wait_idle();
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stopping = true;
  }
  m_queue_cv.notify_all();
  for (std::thread& worker : m_workers)
    worker.join();
}

void StoreQueue::push(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(m_mutex);
  if (m_workers.size() < m_max_workers && m_running + m_queue.size() >= m_workers.size())
    m_workers.emplace_back([this] { work(); });
  m_queue.push_back(std::move(task));
  m_queue_cv.notify_one();
}

void StoreQueue::wait_idle() {
  std::unique_lock<std::mutex> lock(m_mutex);
  m_idle_cv.wait(lock, [&] { return m_queue.empty() && m_running == 0; });
}

void StoreQueue::work() {
  std::unique_lock<std::mutex> lock(m_mutex);
  for (;;) {
    m_queue_cv.wait(lock, [&] { return m_stopping || !m_queue.empty(); });
    if (m_queue.empty())
      return;
    auto task = std::move(m_queue.front());
    m_queue.pop_front();
    ++m_running;
    lock.unlock();
    task();
    task = nullptr; // what it held (a lease, a compile to count) goes before wait_idle() returns
    lock.lock();
    --m_running;
    m_idle_cv.notify_all();
  }
}

} // namespace jitcache::detail
