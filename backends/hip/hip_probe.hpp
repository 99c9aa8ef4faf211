#pragma once

#include <jitcache/expected.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace jitcache::hip {

/// How long the first HIP call (which initialises the runtime and enumerates the GPUs) may
/// take before jitcache gives up on the runtime for the rest of the process.
inline constexpr std::chrono::seconds k_init_limit{60};

/// Runs `fn` on a detached thread and waits at most `limit` for it. Returns its result, or
/// nullopt when it did not return in time: it is then left running (a call stuck in a driver
/// cannot be cancelled) and its result is dropped. `fn` must own everything it touches.
template <typename T>
std::optional<T> call_within(std::chrono::milliseconds limit, std::function<T()> fn) {
  struct State {
    std::mutex mutex;
    std::condition_variable done_cv;
    std::optional<T> result;
  };
  auto state = std::make_shared<State>();
  std::thread([state, fn = std::move(fn)] {
    T value = fn();
    std::lock_guard<std::mutex> lock(state->mutex);
    state->result = std::move(value);
    state->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(state->mutex);
  state->done_cv.wait_for(lock, limit, [&] { return state->result.has_value(); });
  return state->result;
}

/// The number of HIP devices. The first call initialises the HIP runtime (hipGetDeviceCount)
/// within k_init_limit; later calls return the same answer at once. Thread-safe.
/// Errors: runtime_missing (no libamdhip64), no_device (naming hipErrorNoDevice, or zero
/// devices), runtime_error (initialisation did not finish in time: a hung driver; no HIP call
/// is made in this process after that).
Expected<int> device_count();

/// Succeeds once the HIP runtime has initialised, whether or not it found a device: what a
/// hipRTC call needs first, since hipRTC initialises the runtime too (and would hang with it).
/// Errors: runtime_missing, runtime_error (as device_count).
Expected<void> runtime_ready();

} // namespace jitcache::hip
