#pragma once
// Waiting for another thread of this process to block in a given system call (a lock's futex, a
// timed pause), read from /proc/self/task/TID/syscall: a test orders its steps after that thread
// has reached its wait, without sleeping for a guessed time.

#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <string>

namespace jitcache::test {

/// Returns once thread `tid` of this process is in one of the system calls `numbers`
/// (SYS_futex, SYS_clock_nanosleep, ...). Waits for as long as it takes.
inline void wait_until_in_syscall(pid_t tid, std::initializer_list<long> numbers) {
  for (;;) {
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
    long number = -1;
    if (in >> number && std::find(numbers.begin(), numbers.end(), number) != numbers.end())
      return;
    ::usleep(1000);
  }
}

} // namespace jitcache::test
