#pragma once

#include <mutex>

namespace jitcache::detail {

/// A mutex that a fork()ed child finds unlocked, and the state it guards whole. A process-wide
/// memory (the remembered scans, header digests, parts, proven stamp sets) is used by a child
/// as by its parent; with a plain mutex held by another thread of the parent at the fork, the
/// child's first use would wait forever for a thread it does not have. fork() waits, in its
/// prepare step (pthread_atfork), until no thread holds any ForkSafeMutex, and both processes go
/// on with each of them unlocked.
///
/// Contract: a ForkSafeMutex taken while another is held must have been made before it (fork's
/// prepare step takes them newest first, the order the code takes them in), no ForkSafeMutex is
/// made or destroyed while one is held, and the thread that calls fork() holds none. A
/// process-wide object that holds one is made before main() (a namespace-scope initializer
/// calling its accessor, `g_<file>_made_before_main`, named for its file so that files compiled in
/// one batch do not clash): a function-local static that one thread is still making when another
/// forks leaves the child waiting forever on its initialisation guard. Lockable, for
/// std::lock_guard; thread-safe.
class ForkSafeMutex {
public:
  ForkSafeMutex();
  ~ForkSafeMutex();
  ForkSafeMutex(const ForkSafeMutex&) = delete;
  ForkSafeMutex& operator=(const ForkSafeMutex&) = delete;

  void lock() { m_mutex.lock(); }
  void unlock() { m_mutex.unlock(); }
  bool try_lock() { return m_mutex.try_lock(); }

private:
  friend struct ForkSafeMutexes;
  std::mutex m_mutex;
};

} // namespace jitcache::detail
