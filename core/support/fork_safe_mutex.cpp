#include "core/support/fork_safe_mutex.hpp"

#include <pthread.h>

#include <algorithm>
#include <vector>

namespace jitcache::detail {

// Every ForkSafeMutex alive, oldest first, and fork()'s three steps over them.
struct ForkSafeMutexes {
  std::mutex mutex; ///< guards `all`; held from prepare to parent or child
  std::vector<ForkSafeMutex*> all;

  static ForkSafeMutexes& process() {
    static ForkSafeMutexes* const mutexes = [] { // never destroyed: a fork may come during exit
      auto* made = new ForkSafeMutexes;
      pthread_atfork(prepare, release, release);
      return made;
    }();
    return *mutexes;
  }

  static void prepare() {
    ForkSafeMutexes& mutexes = process();
    mutexes.mutex.lock();
    for (auto it = mutexes.all.rbegin(); it != mutexes.all.rend(); ++it)
      (*it)->m_mutex.lock();
  }

  // In the parent and in the child: the child's copies were locked by the thread that forked,
  // which is the child's only thread.
  static void release() {
    ForkSafeMutexes& mutexes = process();
    for (ForkSafeMutex* held : mutexes.all)
      held->m_mutex.unlock();
    mutexes.mutex.unlock();
  }
};

ForkSafeMutex::ForkSafeMutex() {
  ForkSafeMutexes& mutexes = ForkSafeMutexes::process();
  const std::lock_guard<std::mutex> lock(mutexes.mutex);
  mutexes.all.push_back(this);
}

ForkSafeMutex::~ForkSafeMutex() {
  ForkSafeMutexes& mutexes = ForkSafeMutexes::process();
  const std::lock_guard<std::mutex> lock(mutexes.mutex);
  mutexes.all.erase(std::find(mutexes.all.begin(), mutexes.all.end(), this));
}

} // namespace jitcache::detail
