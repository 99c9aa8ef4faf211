#include "core/support/fork_guard.hpp"

#include <pthread.h>

#include <atomic>

namespace jitcache::detail {

namespace {

std::atomic<unsigned> g_generation{0};

void on_fork_child() {
  g_generation.fetch_add(1);
}

// Registered before main(): a fork() that happens before the first call is still counted.
const bool g_registered = [] {
  pthread_atfork(nullptr, nullptr, on_fork_child);
  return true;
}();

} // namespace

unsigned fork_generation() noexcept {
  (void)g_registered;
  return g_generation.load();
}

} // namespace jitcache::detail
